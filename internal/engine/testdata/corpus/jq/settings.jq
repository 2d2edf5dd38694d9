# Flattens a JSON document on standard input into dotted paths and keeps the
# settings under the prefixes given as arguments ($ARGS.positional).
def dotted: map(if type == "number" then "[\(.)]" else ".\(.)" end) | join("");

def under($prefixes): . as $key | any($prefixes[]; . as $p | $key | startswith($p));

input
| [paths(type | . != "object" and . != "array") as $path | {key: ($path | dotted), value: getpath($path)}] as $all
| [$all[] | select(.key | under($ARGS.positional))] as $kept
| ($kept[] | "\(.key) = \(.value | tojson)"),
  "\($kept | length) of \($all | length) settings",
  "types: \($all | map(.value | type) | group_by(.) | map("\(.[0]) \(length)") | join(", "))"
