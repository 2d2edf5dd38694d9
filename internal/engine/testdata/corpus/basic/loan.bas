rem A loan's monthly payment and the first months of its amortization table,
rem then the primes below 60 by the sieve of Eratosthenes.

principal = 12000
rate = 0.045
months = 36

payment = monthly_payment(principal, rate, months)
print "Loan ", principal, " over ", months, " months at ", rate * 100, "%"
print "Monthly payment: ", str$(payment, "%.2f")
print
print "month   interest  principal    balance"
balance = principal
for m = 1 to 6
  interest = balance * rate / 12
  paid = payment - interest
  balance = balance - paid
  print m using "#####", interest using "#######.##", paid using "#######.##", balance using "#########.##"
next m
print "Total interest: ", str$(payment * months - principal, "%.2f")
print

limit = 60
dim composite(limit)
count = 0
result$ = ""
for i = 2 to limit
  if not composite(i) then
    count = count + 1
    result$ = result$ + str$(i) + " "
    for j = i * i to limit step i
      composite(j) = true
    next j
  endif
next i
print count, " primes: ", trim$(result$)

sub monthly_payment(p, annual, n)
  local r
  r = annual / 12
  return p * r / (1 - (1 + r) ^ -n)
end sub
