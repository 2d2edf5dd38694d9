# Counts the words of stdin and prints the most frequent ones, in the
# CoffeeScript idiom: comprehensions, existential operators, destructuring.
fs = require 'fs'

text = fs.readFileSync 0, 'utf8'
counts = {}
for word in text.toLowerCase().match(/[a-z']+/g) ? []
  counts[word] = (counts[word] ? 0) + 1

ranked = ([word, n] for own word, n of counts)
ranked.sort ([a, x], [b, y]) -> y - x or a.localeCompare b

top = ranked[...5]
width = Math.max (word.length for [word] in top)...
console.log "#{word.padEnd width} #{n}" for [word, n] in top
console.log "#{ranked.length} distinct words"
