rem Word frequencies of standard input, most frequent first, ties alphabetical.
rem Words and counts live in two parallel arrays, searched and sorted by hand.

dim words$(500), counts(500), parts$(1)
distinct = 0
total = 0

while not eof(0)
  line input "" text$
  n = token(lower$(text$), parts$(), " .,;:!?\"()")
  for i = 1 to n
    total = total + 1
    add_word(parts$(i))
  next i
wend

rem a simple exchange sort: by count descending, then alphabetically
for i = 1 to distinct - 1
  for j = i + 1 to distinct
    if counts(j) > counts(i) or (counts(j) = counts(i) and words$(j) < words$(i)) then
      swap(i, j)
    endif
  next j
next i

for i = 1 to min(5, distinct)
  print left$(words$(i) + "          ", 10), " ", counts(i)
next i
print total, " words, ", distinct, " distinct"

sub add_word(w$)
  local k
  for k = 1 to distinct
    if words$(k) = w$ then
      counts(k) = counts(k) + 1
      return
    endif
  next k
  distinct = distinct + 1
  words$(distinct) = w$
  counts(distinct) = 1
end sub

sub swap(a, b)
  local t$, t
  t$ = words$(a) : words$(a) = words$(b) : words$(b) = t$
  t = counts(a) : counts(a) = counts(b) : counts(b) = t
end sub
