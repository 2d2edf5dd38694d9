#!/usr/bin/perl
use strict;
use warnings;

my %count;
while (my $line = <STDIN>) {
    chomp $line;
    $count{lc $_}++ for $line =~ /(\w+)/g;
}

for my $word (sort { $count{$b} <=> $count{$a} || $a cmp $b } keys %count) {
    printf "%-5s %d\n", $word, $count{$word};
}
