#!/bin/bash
set -euo pipefail

log() { echo "[$1] ${*:2}" >&2; }

join_by() {
  local IFS="$1"
  shift
  echo "$*"
}

main() {
  local -a files=(report.txt data.csv "my notes.md")
  local f
  for f in "${files[@]}"; do
    case "$f" in
      *.csv) echo "data: ${f%.csv}" ;;
      *.txt|*.md) echo "text: ${f// /_}" ;;
    esac
  done
  join_by , "${files[@]}"
  log info "done with ${#files[@]} files"
  cat <<EOF
args: $#, first: ${1:-none}
EOF
}

main "$@"
