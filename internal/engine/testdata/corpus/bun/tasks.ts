// A task queue with priorities and dependencies, in the TypeScript Bun runs
// directly: an enum, a class with private fields, a topological sort, and
// Bun.hash (wyhash) for short stable tags.
enum Priority {
  Low = 1,
  Normal,
  High,
}

interface Task {
  id: string;
  priority: Priority;
  after: string[];
}

class Planner {
  #tasks = new Map<string, Task>();

  add(id: string, priority = Priority.Normal, ...after: string[]): this {
    this.#tasks.set(id, { id, priority, after });
    return this;
  }

  // Kahn's algorithm; among the tasks that are ready, the highest priority
  // first, then by name.
  order(): Task[] {
    const waiting = new Map<string, number>();
    for (const t of this.#tasks.values()) waiting.set(t.id, t.after.length);
    const ready = [...this.#tasks.values()].filter((t) => t.after.length === 0);
    const done: Task[] = [];
    while (ready.length > 0) {
      ready.sort((a, b) => b.priority - a.priority || a.id.localeCompare(b.id));
      const next = ready.shift()!;
      done.push(next);
      for (const t of this.#tasks.values()) {
        if (!t.after.includes(next.id)) continue;
        const left = waiting.get(t.id)! - 1;
        waiting.set(t.id, left);
        if (left === 0) ready.push(t);
      }
    }
    if (done.length !== this.#tasks.size) throw new Error("dependency cycle");
    return done;
  }
}

const plan = new Planner()
  .add("deploy", Priority.High, "build", "test")
  .add("build", Priority.Normal, "fetch")
  .add("test", Priority.Normal, "build")
  .add("fetch", Priority.Low)
  .add("lint", Priority.High, "fetch")
  .add("docs", Priority.Low);

const order = plan.order();
for (const [i, task] of order.entries()) {
  const tag = Bun.hash(task.id).toString(16).padStart(16, "0").slice(0, 8);
  console.log(`${i + 1}. ${task.id.padEnd(6)} ${Priority[task.priority].padEnd(6)} #${tag}`);
}
console.log(`planned ${order.length} tasks`);

try {
  new Planner().add("a", Priority.Low, "b").add("b", Priority.Low, "a").order();
} catch (e) {
  console.log(`refused: ${(e as Error).message}`);
}
