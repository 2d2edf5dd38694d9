#!/bin/sh
set -eu

usage() {
  echo "usage: $0 N" >&2
  exit 2
}

[ $# -eq 1 ] || usage

n=$1
i=1
while [ "$i" -le "$n" ]; do
  case $((i % 3)) in
    0) printf '%s fizz\n' "$i" ;;
    *) printf '%s\n' "$i" ;;
  esac
  i=$((i + 1))
done
