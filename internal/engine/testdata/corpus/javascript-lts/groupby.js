// Grouping and set algebra the way current Node.js code does it, with no
// lodash: Object.groupBy, Map.groupBy, toSorted, Set methods (Node 22+).
const orders = [
  { id: 1, customer: 'ada', total: 120, tags: ['books', 'gift'] },
  { id: 2, customer: 'alan', total: 35, tags: ['music'] },
  { id: 3, customer: 'ada', total: 60, tags: ['books'] },
  { id: 4, customer: 'grace', total: 210, tags: ['tools', 'gift'] },
];

const byCustomer = Object.groupBy(orders, ({ customer }) => customer);
for (const [name, list] of Object.entries(byCustomer)) {
  const sum = list.reduce((acc, o) => acc + o.total, 0);
  console.log(`${name}: ${list.length} order(s), ${sum}`);
}

const bySize = Map.groupBy(orders, (o) => (o.total >= 100 ? 'large' : 'small'));
console.log('large:', bySize.get('large').map((o) => o.id).join(','));

const top = orders.toSorted((a, b) => b.total - a.total).slice(0, 2);
console.log('top two:', top.map((o) => o.id), 'original first:', orders[0].id);

const tagsOf = (name) => new Set(byCustomer[name].flatMap((o) => o.tags));
const ada = tagsOf('ada');
const grace = tagsOf('grace');
console.log('shared tags:', [...ada.intersection(grace)]);
console.log('all tags:', [...ada.union(grace)].toSorted().join(' '));
console.log('last small order:', orders.findLast((o) => o.total < 100).id);
