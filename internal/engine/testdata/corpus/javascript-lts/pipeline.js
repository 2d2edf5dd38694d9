'use strict';
// Lazy pipelines with iterator helpers and a promise settled from outside,
// both new in the current LTS (Node 22+), and structuredClone for a deep copy.
function* naturals() {
  for (let n = 1; ; n++) yield n;
}

const squaresOfOdds = naturals()
  .filter((n) => n % 2 === 1)
  .map((n) => n * n)
  .take(5)
  .toArray();
console.log(squaresOfOdds.join(' '));

const config = { name: 'svc', limits: { cpu: 1, mem: [256, 512] }, started: new Date(0) };
const copy = structuredClone(config);
copy.limits.mem.push(1024);
console.log(config.limits.mem.length, copy.limits.mem.length, copy.started instanceof Date);

const { promise, resolve } = Promise.withResolvers();
setTimeout(() => resolve('settled from a timer'), 10);

(async () => {
  console.log(await promise);
  const words = ['delta', 'alpha', 'charlie', 'bravo'];
  console.log(words.toSorted().at(-1), words.with(0, 'echo').join(','));
})();
