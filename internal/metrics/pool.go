package metrics

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcp-code-runner/mcp-code-runner/internal/pool"
)

// poolCollector reads the warm pool's state at each scrape: gauges of what
// is there now, counters of what it has done.
type poolCollector struct {
	stats func() []pool.Stat
}

var (
	poolSize    = poolDesc("pool_size", "Idle sandboxes the pool keeps for the language now: its configured size, or more while runs wait.")
	poolMaxSize = poolDesc("pool_max_size", "How many idle sandboxes the pool may grow to while runs wait.")
	poolWaited  = poolDesc("pool_waited_total", "Runs that found the pool empty and waited for a sandbox to be made.")
	poolBlocked = prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "pool_grow_blocked"),
		"1 while runs wait and the pool cannot grow, with the reason (memory, pids; doctor and the server's log say more), else 0.",
		[]string{"language", "reason"}, nil)
	poolIdle     = poolDesc("pool_idle", "Idle sandboxes ready for a run.")
	poolCreating = poolDesc("pool_creating", "Sandboxes being created for the pool.")
	poolWaiting  = poolDesc("pool_waiting", "Runs waiting for a sandbox of an empty pool.")
	poolFailing  = poolDesc("pool_failing", "1 while the pool cannot create sandboxes (see the server's log), else 0.")
	poolCreated  = poolDesc("pool_created_total", "Sandboxes the pool created.")
	poolServed   = poolDesc("pool_served_total", "Sandboxes handed to runs.")
	poolReplaced = poolDesc("pool_replaced_total", "Idle sandboxes replaced because they died or grew old.")
	poolFailures = poolDesc("pool_create_failures_total", "Sandbox creations of the pool that failed.")
)

func poolDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name), help, []string{"language"}, nil)
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{poolSize, poolMaxSize, poolWaited, poolBlocked, poolIdle, poolCreating, poolWaiting, poolFailing, poolCreated, poolServed, poolReplaced, poolFailures} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.stats() {
		failing := 0.0
		if s.Error != "" {
			failing = 1
		}
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, s.Language)
		}
		counter := func(d *prometheus.Desc, v int) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), s.Language)
		}
		gauge(poolSize, float64(s.Size))
		gauge(poolMaxSize, float64(s.MaxSize))
		counter(poolWaited, s.Waited)
		blocked, reason := 0.0, "none"
		if s.GrowBlocked != "" {
			blocked, reason = 1, "other"
			for _, r := range []string{"memory", "pids"} {
				if strings.Contains(s.GrowBlocked, r+": ") {
					reason = r
				}
			}
		}
		ch <- prometheus.MustNewConstMetric(poolBlocked, prometheus.GaugeValue, blocked, s.Language, reason)
		gauge(poolIdle, float64(s.Idle))
		gauge(poolCreating, float64(s.Creating))
		gauge(poolWaiting, float64(s.Waiting))
		gauge(poolFailing, failing)
		counter(poolCreated, s.Created)
		counter(poolServed, s.Served)
		counter(poolReplaced, s.Replaced)
		counter(poolFailures, s.Failures)
	}
}
