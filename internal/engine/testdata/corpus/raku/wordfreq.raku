# Word frequencies of stdin with a Bag; MAIN takes how many to show.
sub MAIN(Int $top = 5, Bool :$lower = True) {
    my @words = $*IN.lines.map({ $lower ?? .lc !! $_ }).map(*.comb(/\w+/)).flat;
    my $bag = @words.Bag;

    for $bag.sort({ -.value, .key }).head($top).kv -> $i, (:key($word), :value($count)) {
        printf "%d. %-8s %s\n", $i + 1, $word, '*' x $count;
    }
    say "{ $bag.elems } distinct of { $bag.total } words";
    say "longest: ", @words.max(*.chars);
}
