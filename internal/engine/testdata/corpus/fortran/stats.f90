module stats
  implicit none
  private
  public :: mean, stddev
contains
  pure real function mean(x)
    real, intent(in) :: x(:)
    mean = sum(x) / size(x)
  end function mean

  pure real function stddev(x)
    real, intent(in) :: x(:)
    stddev = sqrt(sum((x - mean(x))**2) / (size(x) - 1))
  end function stddev
end module stats

program main
  use stats
  implicit none
  real :: data(6) = [2.0, 4.0, 4.0, 5.0, 7.0, 9.0]
  integer :: i

  write (*, '(a, f6.3)') 'mean:   ', mean(data)
  write (*, '(a, f6.3)') 'stddev: ', stddev(data)
  write (*, '(a, f4.1, a, i0)') 'max:    ', maxval(data), ' at ', maxloc(data, dim=1)
  write (*, '(a, *(i0, 1x))') 'above mean at:', pack([(i, i = 1, size(data))], data > mean(data))
end program main
