package room

import (
	"sync/atomic"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// meter is what this instance measured of the shop since it last took a sample:
// the admitted requests by time to first byte, their total time, and the failed
// ones. Adding is an atomic add to a bucket and one to the total, so the admitted
// hot path takes no lock; the Prometheus histogram is filled from the samples taken
// (Metrics.Measured), not request by request, so a request pays for one histogram.
type meter struct {
	latency [queue.LatencyBuckets]atomic.Uint64
	total   atomic.Int64 // nanoseconds
	failed  atomic.Uint64
}

func (m *meter) add(d time.Duration, failed bool) {
	m.latency[queue.LatencyBucket(d)].Add(1)
	m.total.Add(int64(d))
	if failed {
		m.failed.Add(1)
	}
}

// take returns what was measured, with its total time, and starts again from
// nothing. A request measured while it runs lands in this sample or the next, never
// in both nor in neither (its total may land in the other one: a rounding of the
// Prometheus sum, never of the control law's reading).
func (m *meter) take() (queue.Sample, time.Duration) {
	s := queue.Sample{Latency: make([]uint64, queue.LatencyBuckets), Failed: m.failed.Swap(0)}
	for i := range m.latency {
		s.Latency[i] = m.latency[i].Swap(0)
	}
	return s, time.Duration(m.total.Swap(0))
}

// Served records what the shop did with one request the room let through: how long
// from handing it on to the response's header (ttfb), and whether it failed (a 5xx,
// or an error from the handler). Requests the room answered itself are not served.
func (rm *Room) Served(ttfb time.Duration, failed bool) { rm.meter.add(ttfb, failed) }
