import sys
from typing import Iterator


def fib() -> Iterator[int]:
    a, b = 0, 1
    while True:
        yield a
        a, b = b, a + b


def take(n: int, it: Iterator[int]) -> list[int]:
    return [x for _, x in zip(range(n), it)]


try:
    print(take(int(sys.argv[1]), fib()))
    print(take(int("ten"), fib()))
except ValueError as err:
    print(f"error: {err}", file=sys.stderr)
    print("recovered")
