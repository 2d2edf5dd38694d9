# Compiled once when the image is built, as /workspace/main.cr, to fill
# /opt/crystal-cache: Crystal keeps one LLVM module per type and reuses each
# one's object file when the module comes out the same, so a user's program
# that touches the same standard-library types skips their code generation.
record Point, x : Int32, y : Float64

class Counter
  getter counts = Hash(String, Int32).new(0)

  def add(word : String) : Nil
    counts[word] += 1
  end
end

counter = Counter.new
line = gets || "a b a"
line.split.each { |w| counter.add(w.downcase) }
ranked = counter.counts.to_a.sort_by { |(w, n)| {-n, w} }
ranked.each_with_index do |(word, n), i|
  printf("%d. %-8s %d\n", i + 1, word, n)
  puts "#{word.ljust(8)} #{"*" * n} #{n.to_f / 3}"
end
points = (1..5).map { |i| Point.new(i, i * 1.5) }
puts points.sum(&.y).round(2), points.max_by(&.x), ARGV.join(" ")
numbers = [3, 1, 2].sort.map(&.to_s).join(",")
STDERR.puts numbers
begin
  puts [1, 2, 3][5]
rescue ex : IndexError
  puts ex.message
end
exit 1 if ARGV.size > 99
