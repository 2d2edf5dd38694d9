// Counts the words of stdin and prints the most frequent ones, the Bun way:
// Bun.stdin is a BunFile, and console is an async iterable of stdin's lines.
const counts: Record<string, number> = {};

for await (const line of console) {
  for (const word of line.toLowerCase().match(/[a-z']+/g) ?? []) {
    counts[word] = (counts[word] ?? 0) + 1;
  }
}

const top = Object.entries(counts)
  .sort(([a, x], [b, y]) => y - x || a.localeCompare(b))
  .slice(0, 5);

const width = Math.max(...top.map(([word]) => word.length));
for (const [word, count] of top) {
  console.log(`${word.padEnd(width)} ${count}`);
}
console.log(`${Object.keys(counts).length} distinct words`);
