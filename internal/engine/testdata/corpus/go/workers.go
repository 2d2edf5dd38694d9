package main

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

type result struct {
	word  string
	upper string
}

func worker(jobs <-chan string, results chan<- result, wg *sync.WaitGroup) {
	defer wg.Done()
	for w := range jobs {
		results <- result{word: w, upper: strings.ToUpper(w)}
	}
}

func main() {
	words := []string{"gopher", "channel", "select", "defer"}
	jobs := make(chan string)
	results := make(chan result, len(words))

	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go worker(jobs, results, &wg)
	}
	for _, w := range words {
		jobs <- w
	}
	close(jobs)
	wg.Wait()
	close(results)

	var out []result
	for r := range results {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].word < out[j].word })
	for _, r := range out {
		fmt.Printf("%-8s %s\n", r.word, r.upper)
	}
}
