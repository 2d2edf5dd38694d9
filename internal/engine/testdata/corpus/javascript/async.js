const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

class Job {
  static #count = 0;
  constructor(name, ms) {
    this.name = name;
    this.ms = ms;
    Job.#count++;
  }
  async run() {
    await sleep(this.ms);
    return `${this.name} done`;
  }
  static get count() { return Job.#count; }
}

(async () => {
  const jobs = [new Job('slow', 30), new Job('fast', 5)];
  const results = await Promise.all(jobs.map((j) => j.run()));
  console.log(results.join('; '), `(${Job.count} jobs)`);
  try {
    await Promise.reject(new Error('nope'));
  } catch (err) {
    console.log(`caught: ${err.message}`);
  }
})();
