# Sum sales per region from CSV on stdin; header skipped.
BEGIN { FS = "," }
NR == 1 { next }
{
    total[$1] += $3
    count[$1]++
    grand += $3
}
END {
    PROCINFO["sorted_in"] = "@ind_str_asc"
    for (region in total)
        printf "%-5s %8.2f (%d)\n", region, total[region], count[region]
    printf "all   %8.2f\n", grand
}
