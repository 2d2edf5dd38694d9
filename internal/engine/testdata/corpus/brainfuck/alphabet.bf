Prints the alphabet in capitals and then in small letters: each on its line
Multiplication loops build the values and a counter of 26 steps through them

++++++++[>++++++++>+++>+<<<-]  c1 = 64 and c2 = 24 and c3 = 8
>+>++>++                       c1 = 65 (A) and c2 = 26 and c3 = 10 (a newline)
<[<.+>-]                       26 times: print c1 and step it on
>.                             the newline
<<++++++                       c1 = 91 plus 6 = 97 (a)
<+++++[>>+++++<<-]>>+          c2 = 5 times 5 plus 1 = 26
[<.+>-]>.                      the small letters and a newline
