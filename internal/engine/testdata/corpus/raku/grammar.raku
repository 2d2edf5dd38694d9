# Arithmetic with a grammar and an actions class: the Raku way to parse.
grammar Arith {
    rule TOP        { <expression> }
    rule expression { <term>+ % <add-op> }
    rule term       { <factor>+ % <mul-op> }
    rule factor     { <number> | '(' <expression> ')' }
    token add-op    { '+' | '-' }
    token mul-op    { '*' | '/' }
    token number    { \d+ [ '.' \d+ ]? }
}

class Evaluate {
    method TOP($/)        { make $<expression>.made }
    method expression($/) { make fold($<term>».made, $<add-op>».Str) }
    method term($/)       { make fold($<factor>».made, $<mul-op>».Str) }
    method factor($/)     { make ($<number> // $<expression>).made }
    method number($/)     { make +$/ }

    sub fold(@values, @ops) {
        my $acc = @values.shift;
        for @ops Z @values -> ($op, $v) {
            $acc = do given $op {
                when '+' { $acc + $v }
                when '-' { $acc - $v }
                when '*' { $acc * $v }
                when '/' { $acc / $v }
            }
        }
        $acc
    }
}

for '1 + 2 * 3', '(1 + 2) * 3', '10 / 4 - 1', '2 * (3 + 4) * 5', '7 +' -> $source {
    with Arith.parse($source, actions => Evaluate) {
        say "$source = {.made}";
    }
    else {
        say "$source: does not parse";
    }
}

my @squares = (1..10).map(* ** 2);
say "squares: @squares[]";
say "sum of even squares: { [+] @squares.grep(* %% 2) }";
say "rational: { 1/3 + 1/6 } ({ (1/3 + 1/6).^name })";
