"""Count words from stdin, the way a script reads its input."""
import sys
from collections import Counter


def main() -> None:
    words = (w.strip(".,!?").lower() for line in sys.stdin for w in line.split())
    counts = Counter(w for w in words if w)
    for word, n in counts.most_common(3):
        print(f"{word:<6}{n:>3}")


if __name__ == "__main__":
    main()
