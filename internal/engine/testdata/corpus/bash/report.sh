#!/usr/bin/env bash
set -euo pipefail

declare -A count=()
total=0

while IFS=, read -r name qty; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  count[$name]=$(( ${count[$name]:-0} + qty ))
  (( total += qty ))
done

for name in $(printf '%s\n' "${!count[@]}" | sort); do
  printf '%-6s %3d\n' "$name" "${count[$name]}"
done
echo "total: $total"
