// Package bench measures, side by side in one run, what a run costs on each
// path: a bare process on the host, a cold sandbox (create, start, run,
// remove), a warm pooled sandbox through the engine and through MCP
// Streamable HTTP; the container churn ceiling of the machine; sustained
// load; and memory. Figures from one run are comparable with each other;
// across runs on a shared machine, compare ratios.
package bench

import (
	"fmt"
	"runtime"
	"slices"
	"time"
)

// Sample is a set of latencies.
type Sample struct {
	Name  string
	Times []time.Duration
	Errs  int
	Wall  time.Duration // wall time of the whole series, for rates
}

func (s *Sample) add(d time.Duration) { s.Times = append(s.Times, d) }

// time runs before (untimed), then times call, counting a failure as an
// error; Wall adds up the timed calls.
func (s *Sample) time(before func(), call func() bool) {
	if before != nil {
		before()
	}
	t := time.Now()
	ok := call()
	d := time.Since(t)
	if !ok {
		s.Errs++
		return
	}
	s.Wall += d
	s.add(d)
}

// Quantile returns the q-quantile (nearest rank) of the sample.
func (s *Sample) Quantile(q float64) time.Duration {
	if len(s.Times) == 0 {
		return 0
	}
	t := append([]time.Duration(nil), s.Times...)
	slices.Sort(t)
	i := int(q*float64(len(t))+0.5) - 1
	return t[max(0, min(i, len(t)-1))]
}

// Rate returns completed runs per second over the series' wall time.
func (s *Sample) Rate() float64 {
	if s.Wall <= 0 {
		return 0
	}
	return float64(len(s.Times)) / s.Wall.Seconds()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }

func numCPU() int { return runtime.NumCPU() }
