#!/bin/sh
# Reads key=value lines and prints the keys that are set, sorted.
while IFS='=' read -r key value; do
  if [ -n "$value" ]; then
    echo "$key"
  fi
done | sort | tr '\n' ' '
echo
