// Counts the words of stdin and prints the most frequent ones, reading the
// input the Deno way: Deno.stdin's web stream, decoded and split into lines
// as it arrives (what @std/streams' TextLineStream does, written out here
// because the sandbox has no network to fetch it).
class LineStream extends TransformStream<string, string> {
  constructor() {
    let rest = "";
    super({
      transform(chunk, controller) {
        const parts = (rest + chunk).split("\n");
        rest = parts.pop() ?? "";
        parts.forEach((line) => controller.enqueue(line));
      },
      flush(controller) {
        if (rest) controller.enqueue(rest);
      },
    });
  }
}

const counts = new Map<string, number>();

const lines = Deno.stdin.readable
  .pipeThrough(new TextDecoderStream())
  .pipeThrough(new LineStream());

for await (const line of lines) {
  for (const word of line.toLowerCase().match(/[a-z']+/g) ?? []) {
    counts.set(word, (counts.get(word) ?? 0) + 1);
  }
}

const top = [...counts.entries()]
  .sort(([a, x], [b, y]) => y - x || a.localeCompare(b))
  .slice(0, 5);

const width = Math.max(...top.map(([word]) => word.length));
for (const [word, count] of top) {
  console.log(`${word.padEnd(width)} ${count}`);
}
console.log(`${counts.size} distinct words`);
