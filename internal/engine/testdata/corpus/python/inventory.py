from dataclasses import dataclass, field
from itertools import groupby
from operator import attrgetter


@dataclass(order=True)
class Item:
    category: str
    name: str
    price: float = field(compare=False)


items = [Item("fruit", "apple", 0.5), Item("veg", "leek", 1.25),
         Item("fruit", "pear", 0.75), Item("veg", "kale", 2.0)]

for category, group in groupby(sorted(items), key=attrgetter("category")):
    group = list(group)
    total = sum(i.price for i in group)
    names = ", ".join(i.name for i in group)
    print(f"{category}: {names} (total {total:.2f})")

squares = {n: n * n for n in range(1, 6) if n % 2}
print(squares, [*map(str.upper, ["a", "b"])])
