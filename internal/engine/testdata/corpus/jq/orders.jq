# Orders on standard input (one JSON array): spend per customer, the best
# seller and a CSV report, written as jq pipelines are.
def spent: map(.qty * .price) | add | . * 100 | round / 100;

input as $orders
| ($orders
   | group_by(.customer)
   | map({customer: .[0].customer, orders: length, spent: spent})
   | sort_by(-.spent)) as $customers
| "Customers by spend:",
  ($customers[] | "  \(.customer): \(.orders) order(s), \(.spent)"),
  "Best seller: " + ($orders
    | group_by(.item)
    | map({item: .[0].item, qty: (map(.qty) | add)})
    | max_by(.qty)
    | "\(.item) (\(.qty))"),
  "CSV:",
  (["customer", "item", "qty"] | @csv),
  ($orders[] | [.customer, .item, .qty] | @csv),
  ($customers | map({(.customer): .spent}) | add | tojson)
