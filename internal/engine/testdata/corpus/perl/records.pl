use strict;
use warnings;

my @people = (
    { name => 'Ada',   born => 1815 },
    { name => 'Alan',  born => 1912 },
    { name => 'Grace', born => 1906 },
);

my @sorted = sort { $a->{born} <=> $b->{born} } @people;
print join(', ', map { "$_->{name} ($_->{born})" } @sorted), "\n";

my $text = <<"END";
Ada Lovelace, 1815-12-10
Alan Turing, 1912-06-23
END

while ($text =~ /^(\w+) (\w+), (\d{4})-(\d\d)-\d\d$/mg) {
    print "$2, $1: month $4 of $3\n";
}

my @evens = grep { $_ % 2 == 0 } 1 .. 10;
print "evens: @evens[0..2] ... $evens[-1]\n";
