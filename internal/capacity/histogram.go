package capacity

import (
	"sync"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/prometheus/client_golang/prometheus"
)

// ttfbBounds are the upper bounds, in seconds, of the shop's time-to-first-byte
// histogram: 4.096 ms doubling to about 33.5 s. Each is a power of two microseconds,
// which is also a bound of the room's own finer buckets (queue.LatencyBucket), so
// every request the room measured lands in the bucket it belongs to.
var ttfbBounds = prometheus.ExponentialBuckets(float64(1<<12)/1e6, 2, ttfbBucketCount)

const ttfbBucketCount = 14

// ttfbBucketOf maps each of the room's buckets to the first of ttfbBounds that holds
// it (len(ttfbBounds) for none: only the +Inf bucket).
var ttfbBucketOf = func() [queue.LatencyBuckets]int {
	var m [queue.LatencyBuckets]int
	for i := range m {
		top := queue.BucketTop(i).Seconds()
		j := 0
		for j < len(ttfbBounds) && ttfbBounds[j] < top {
			j++
		}
		m[i] = j
	}
	return m
}()

// A Histogram is the shop's time to first byte as Prometheus reads it
// (caddy_waiting_room_upstream_ttfb_seconds), per room. The rooms fill it from the
// samples their meters take each control period, not request by request: the
// admitted request pays for the meter's one histogram only, and a second,
// Prometheus's (a count, a bucket and a compare-and-swap on the sum), would cost about
// as much again on the hot path.
type Histogram struct {
	desc  *prometheus.Desc
	mu    sync.Mutex
	rooms map[string]*histogramCounts
}

// histogramCounts are one room's cumulative counts: per bound, all, and the total time.
type histogramCounts struct {
	buckets [ttfbBucketCount]uint64
	count   uint64
	sum     time.Duration
}

// NewHistogram is an empty histogram, of no room yet.
func NewHistogram() *Histogram {
	return &Histogram{
		desc: prometheus.NewDesc("caddy_waiting_room_upstream_ttfb_seconds",
			"The shop's time to first byte for the requests of admitted visitors, from when it had each whole (handed on, its body read) to its response's header (this instance).",
			[]string{"room"}, nil),
		rooms: map[string]*histogramCounts{},
	}
}

// Add counts a room's sample, taken with its total time.
func (h *Histogram) Add(room string, s *queue.Sample, total time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.rooms[room]
	if c == nil {
		c = new(histogramCounts)
		h.rooms[room] = c
	}
	for i, n := range s.Latency {
		if n == 0 {
			continue
		}
		c.count += n
		if j := ttfbBucketOf[i]; j < len(c.buckets) {
			c.buckets[j] += n
		}
	}
	c.sum += total
}

// Start makes room's series exist, at zero, from the moment it is provisioned.
func (h *Histogram) Start(room string) { h.Add(room, &queue.Sample{}, 0) }

func (h *Histogram) Delete(room string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.rooms, room)
}

// Describe and Collect make it a prometheus.Collector.
func (h *Histogram) Describe(ch chan<- *prometheus.Desc) { ch <- h.desc }

func (h *Histogram) Collect(ch chan<- prometheus.Metric) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for room, c := range h.rooms {
		cumulative := make(map[float64]uint64, len(ttfbBounds))
		var n uint64
		for j, bound := range ttfbBounds {
			n += c.buckets[j]
			cumulative[bound] = n
		}
		ch <- prometheus.MustNewConstHistogram(h.desc, c.count, c.sum.Seconds(), cumulative, room)
	}
}
