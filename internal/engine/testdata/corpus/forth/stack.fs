\ Words built on words: a small stack-effect vocabulary, a counted loop,
\ recursion and a number table, the way Forth is written: short
\ definitions, each with its stack comment, tested at once.

: square   ( n -- n*n )  dup * ;
: cube     ( n -- n^3 )  dup square * ;
: sum-of-squares ( a b -- a*a+b*b )  square swap square + ;

: gcd ( a b -- gcd )  begin ?dup while tuck mod repeat ;
: lcm ( a b -- lcm )  2dup * abs -rot gcd / ;

: factorial ( n -- n! )  dup 2 < if drop 1 else dup 1- recurse * then ;

: fib ( n -- fib )  0 1 rot 0 ?do tuck + loop drop ;

: .r4 ( n -- )  4 .r ;

: table ( -- )
  ."    n  n^2  n^3   n!"
  7 1 do
    cr i .r4 i square .r4 i cube .r4 i factorial 6 .r
  loop cr ;

table
." 3 and 4: " 3 4 sum-of-squares . cr
." gcd 84 36: " 84 36 gcd . cr
." lcm 4 6: " 4 6 lcm . cr
." fib 0..12: " 13 0 do i fib . loop cr

variable total
: tally ( addr n -- )  0 ?do dup i cells + @ total +! loop drop ;
create scores 12 , 7 , 30 , 5 , 18 ,
0 total !
scores 5 tally
." total of scores: " total @ . cr
