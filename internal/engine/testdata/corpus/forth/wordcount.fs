\ Counts the lines, words and characters of standard input, like wc,
\ reading it a character at a time with KEY until the end of input.

variable #lines   variable #words   variable #chars
variable in-word

: eof? ( c -- flag )  dup -1 = swap 4 = or ;
: blank? ( c -- flag )  dup bl = over 9 = or over 10 = or swap 13 = or ;

: count-char ( c -- )
  1 #chars +!
  dup 10 = if 1 #lines +! then
  blank? if
    0 in-word !
  else
    in-word @ 0= if 1 #words +! then
    -1 in-word !
  then ;

: wc ( -- )
  0 #lines !  0 #words !  0 #chars !  0 in-word !
  begin key dup eof? 0= while count-char repeat drop ;

wc
." lines " #lines @ . cr
." words " #words @ . cr
." chars " #chars @ . cr
