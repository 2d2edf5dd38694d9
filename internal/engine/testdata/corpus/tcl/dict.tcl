set inventory [dict create apples 3 pears 0 plums 7]
dict incr inventory apples 2

foreach fruit [lsort [dict keys $inventory]] {
    set n [dict get $inventory $fruit]
    if {$n == 0} {
        puts "$fruit: out of stock"
    } else {
        puts [format "%-7s %2d" $fruit: $n]
    }
}

proc sum {args} {
    set total 0
    foreach x $args { incr total $x }
    return $total
}
puts "sum: [sum {*}[dict values $inventory]]"
