program matrix
  implicit none
  integer, parameter :: n = 3
  real :: a(n, n), b(n, n), c(n, n)
  integer :: i, j

  do j = 1, n
    do i = 1, n
      a(i, j) = real(i + j)
      b(i, j) = merge(1.0, 0.0, i == j)
    end do
  end do
  c = matmul(a, 2.0 * b)
  do i = 1, n
    print '(3f6.1)', c(i, :)
  end do
  print '(a, f6.1)', 'trace: ', sum([(c(i, i), i = 1, n)])
  call swap_first_row(c)
  print '(3f6.1)', c(1, :)
contains
  subroutine swap_first_row(m)
    real, intent(inout) :: m(:, :)
    m(1, :) = m(1, size(m, 2):1:-1)
  end subroutine swap_first_row
end program matrix
