gets stdin line
set words [split [string trim $line]]
puts "words: [llength $words]"
puts "upper: [string toupper [lindex $words 0]]"
puts "mapped: [string map {a 4 e 3} $line]"
puts "sorted: [lsort -decreasing $words]"
if {[catch {expr {1 / 0}} msg]} {
    puts "caught: $msg"
}
