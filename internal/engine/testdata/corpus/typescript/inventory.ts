enum Level {
  Low = "low",
  High = "high",
}

class Stock {
  private readonly items = new Map<string, number>();

  add(name: string, qty = 1): this {
    this.items.set(name, (this.items.get(name) ?? 0) + qty);
    return this;
  }

  level(name: string): Level {
    return (this.items.get(name) ?? 0) > 2 ? Level.High : Level.Low;
  }
}

async function main(): Promise<void> {
  const stock = new Stock().add("bolt", 5).add("nut").add("nut");
  const names = ["bolt", "nut", "gear"] as const;
  const report = await Promise.all(names.map(async (n) => `${n}=${stock.level(n)}`));
  console.log(report.join(" "));
}

main();
