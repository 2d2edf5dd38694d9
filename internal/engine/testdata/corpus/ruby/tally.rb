# frozen_string_literal: true

words = $stdin.read.downcase.scan(/[a-z']+/)
words.tally
     .sort_by { |word, n| [-n, word] }
     .first(3)
     .each_with_index { |(word, n), i| puts "#{i + 1}. #{word} (#{n})" }

puts words.group_by(&:size).transform_values(&:count).sort.to_h.inspect
