package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
)

var ErrNegative = errors.New("negative value")

type Stack[T any] struct{ items []T }

func (s *Stack[T]) Push(v T) { s.items = append(s.items, v) }

func (s *Stack[T]) Pop() (T, bool) {
	var zero T
	if len(s.items) == 0 {
		return zero, false
	}
	v := s.items[len(s.items)-1]
	s.items = s.items[:len(s.items)-1]
	return v, true
}

func parse(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("parse %q: %w", s, err)
	}
	if n < 0 {
		return 0, fmt.Errorf("parse %q: %w", s, ErrNegative)
	}
	return n, nil
}

func main() {
	var st Stack[int]
	for _, arg := range os.Args[1:] {
		n, err := parse(arg)
		switch {
		case errors.Is(err, ErrNegative):
			fmt.Println("skip negative:", arg)
		case err != nil:
			fmt.Fprintln(os.Stderr, "error:", err)
		default:
			st.Push(n)
		}
	}
	for v, ok := st.Pop(); ok; v, ok = st.Pop() {
		fmt.Print(v, " ")
	}
	fmt.Println()
}
