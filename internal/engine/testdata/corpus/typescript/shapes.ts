type Shape =
  | { kind: "circle"; radius: number }
  | { kind: "rect"; width: number; height: number };

function area(s: Shape): number {
  switch (s.kind) {
    case "circle":
      return Math.PI * s.radius ** 2;
    case "rect":
      return s.width * s.height;
    default: {
      const never: never = s;
      return never;
    }
  }
}

interface Named<T> {
  name: string;
  value: T;
}

const shapes: Named<Shape>[] = [
  { name: "unit circle", value: { kind: "circle", radius: 1 } },
  { name: "square", value: { kind: "rect", width: 2, height: 2 } },
];

for (const { name, value } of shapes) {
  console.log(`${name}: ${area(value).toFixed(3)}`);
}
