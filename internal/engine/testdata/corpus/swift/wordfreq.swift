// Word frequencies of stdin: a Dictionary with a default, sorted(by:) on
// tuples, and the higher-order functions of Sequence.
var counts: [String: Int] = [:]
var lines = 0

while let line = readLine() {
    lines += 1
    let words = line.lowercased().split { !($0.isLetter || $0 == "'") }
    for word in words {
        counts[String(word), default: 0] += 1
    }
}

let ranked = counts.sorted { ($0.value, $1.key) > ($1.value, $0.key) }

for (rank, (word, count)) in ranked.prefix(5).enumerated() {
    let padded = word.padding(toLength: 8)
    print("\(rank + 1). \(padded) \(String(repeating: "#", count: count))")
}

let total = counts.values.reduce(0, +)
print("\(lines) lines, \(counts.count) distinct words, \(total) in all")

if let longest = counts.keys.max(by: { ($0.count, $1) < ($1.count, $0) }) {
    print("longest word: \(longest) (\(longest.count) letters)")
}

var letters: [Character: Int] = [:]
for (word, count) in counts {
    for letter in word where letter.isLetter {
        letters[letter, default: 0] += count
    }
}
if let (letter, _) = letters.max(by: { ($0.value, $1.key) < ($1.value, $0.key) }) {
    print("commonest letter: \(letter)")
}

extension String {
    /// Pads with spaces on the right to at least `length` characters.
    func padding(toLength length: Int) -> String {
        count >= length ? self : self + String(repeating: " ", count: length - count)
    }
}
