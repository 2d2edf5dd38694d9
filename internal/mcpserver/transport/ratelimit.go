package transport

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/time/rate"
)

// rateLimiter keeps a token bucket per client.
type rateLimiter struct {
	perMinute int
	mu        sync.Mutex
	buckets   map[string]*bucket
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

func newRateLimiter(perMinute int) *rateLimiter {
	return &rateLimiter{perMinute: perMinute, buckets: map[string]*bucket{}}
}

// clientKey names the client: its principal when authenticated, else its
// address. The token itself is never a key.
func clientKey(r *http.Request) string {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		return "principal:" + principalOf(ti).Name
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "addr:" + host
}

func (rl *rateLimiter) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := clientKey(r)
		rl.mu.Lock()
		b, ok := rl.buckets[key]
		if !ok {
			if len(rl.buckets) > 100000 {
				rl.buckets = map[string]*bucket{}
			}
			burst := max(1, rl.perMinute/6) // ten seconds' worth
			b = &bucket{lim: rate.NewLimiter(rate.Limit(float64(rl.perMinute)/60), burst)}
			rl.buckets[key] = b
		}
		b.seen = time.Now()
		res := b.lim.Reserve()
		rl.mu.Unlock()
		if d := res.Delay(); d > 0 {
			res.Cancel()
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(d.Seconds()))))
			http.Error(w, fmt.Sprintf("Too Many Requests: the limit is %d requests per minute per client", rl.perMinute), http.StatusTooManyRequests)
			return
		}
		next.ServeHTTP(w, r)
	})
}
