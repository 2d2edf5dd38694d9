'use strict';

const orders = [
  { id: 1, customer: 'ada', total: 30 },
  { id: 2, customer: 'bob', total: 12.5 },
  { id: 3, customer: 'ada', total: 7.25 },
];

const byCustomer = orders.reduce((acc, { customer, total }) => {
  acc[customer] = (acc[customer] ?? 0) + total;
  return acc;
}, {});

for (const [name, sum] of Object.entries(byCustomer).sort(([, a], [, b]) => b - a)) {
  console.log(`${name.padEnd(4)} ${sum.toFixed(2)}`);
}
console.log(JSON.stringify(orders.filter(o => o.total > 10).map(o => o.id)));
