// A small inventory with typed records, a generic class, and an interface
// implemented by a discriminated union: the TypeScript Deno runs as is.
interface Priced {
  readonly price: number;
}

type Item =
  | { kind: "book"; title: string; author: string; price: number }
  | { kind: "tool"; name: string; weightKg: number; price: number };

function describe(item: Item): string {
  switch (item.kind) {
    case "book":
      return `"${item.title}" by ${item.author}`;
    case "tool":
      return `${item.name} (${item.weightKg.toFixed(1)} kg)`;
  }
}

class Stock<T extends Priced> {
  #entries = new Map<string, { item: T; quantity: number }>();

  add(sku: string, item: T, quantity = 1): this {
    const entry = this.#entries.get(sku);
    if (entry) entry.quantity += quantity;
    else this.#entries.set(sku, { item, quantity });
    return this;
  }

  remove(sku: string, quantity: number): void {
    const entry = this.#entries.get(sku);
    if (!entry || entry.quantity < quantity) {
      throw new RangeError(`not enough of ${sku} in stock`);
    }
    entry.quantity -= quantity;
  }

  get value(): number {
    let total = 0;
    for (const { item, quantity } of this.#entries.values()) {
      total += item.price * quantity;
    }
    return total;
  }

  *[Symbol.iterator](): Generator<[string, T, number]> {
    for (const [sku, { item, quantity }] of this.#entries) {
      yield [sku, item, quantity];
    }
  }
}

const stock = new Stock<Item>()
  .add("B-1", { kind: "book", title: "Dune", author: "Frank Herbert", price: 9.5 }, 3)
  .add("T-7", { kind: "tool", name: "Hammer", weightKg: 0.8, price: 14 })
  .add("B-1", { kind: "book", title: "Dune", author: "Frank Herbert", price: 9.5 }, 2);

stock.remove("B-1", 1);
try {
  stock.remove("T-7", 5);
} catch (e) {
  if (e instanceof RangeError) console.log(`refused: ${e.message}`);
}

for (const [sku, item, quantity] of stock) {
  console.log(`${sku.padEnd(4)} ${String(quantity).padStart(2)} x ${describe(item)}`);
}
const money = new Intl.NumberFormat("en-US", { style: "currency", currency: "USD" });
console.log(`total ${money.format(stock.value)}`);
