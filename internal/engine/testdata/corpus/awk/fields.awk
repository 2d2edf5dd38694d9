# Print the longest line and each line's field count.
{
    printf "%d: %d fields\n", NR, NF
    if (length($0) > max) { max = length($0); longest = $0 }
}
END { print "longest: " longest; print toupper(substr(longest, 1, 3)) }
