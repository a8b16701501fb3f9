package room

import (
	"sync/atomic"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// meter is what this instance measured of the shop since it last reported: the
// admitted requests by time to first byte, and the failed ones. Adding is one atomic
// add to a bucket, so the admitted hot path takes no lock.
type meter struct {
	latency [queue.LatencyBuckets]atomic.Uint64
	failed  atomic.Uint64
}

func (m *meter) add(d time.Duration, failed bool) {
	m.latency[queue.LatencyBucket(d)].Add(1)
	if failed {
		m.failed.Add(1)
	}
}

// take returns what was measured and starts again from nothing. A request measured
// while it runs lands in this sample or the next, never in both nor in neither.
func (m *meter) take() queue.Sample {
	s := queue.Sample{Latency: make([]uint64, queue.LatencyBuckets), Failed: m.failed.Swap(0)}
	for i := range m.latency {
		s.Latency[i] = m.latency[i].Swap(0)
	}
	return s
}

// Served records what the shop did with one request the room let through: how long
// from handing it on to the response's header (ttfb), and whether it failed (a 5xx,
// or an error from the handler). Requests the room answered itself are not served.
func (rm *Room) Served(ttfb time.Duration, failed bool) {
	rm.meter.add(ttfb, failed)
	rm.cfg.Metrics.Served(ttfb, failed)
}
