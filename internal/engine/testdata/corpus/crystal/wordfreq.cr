# Word frequencies of stdin: tally, sort_by and string formatting.
counts = Hash(String, Int32).new(0)
lines = 0

STDIN.each_line do |line|
  lines += 1
  line.downcase.scan(/[a-z']+/) { |match| counts[match[0]] += 1 }
end

ranked = counts.to_a.sort_by { |word, count| {-count, word} }

ranked.first(5).each_with_index(1) do |(word, count), rank|
  puts "#{rank}. #{word.ljust(8)} #{"#" * count}"
end

total = counts.values.sum
puts "#{lines} lines, #{counts.size} distinct words, #{total} in all"
longest = counts.keys.max_by(&.size)
puts "longest word: #{longest} (#{longest.size} letters)"
letters = counts.flat_map { |word, count| word.chars.map { |c| {c, count} } }
  .each_with_object(Hash(Char, Int32).new(0)) { |(c, n), h| h[c] += n }
puts "commonest letter: #{letters.max_by(&.last).first}"
