package capacity

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// The histogram filled from the room's samples counts every request in the bucket a
// Prometheus histogram observing it would: its bounds are bounds of the room's
// buckets. Durations of whole microseconds, as the room measures them.
func TestTTFBHistogramCountsLikeObserving(t *testing.T) {
	h := NewHistogram()
	rnd := rand.New(rand.NewPCG(3, 4))
	var want [ttfbBucketCount]uint64
	var total time.Duration
	s := queue.Sample{Latency: make([]uint64, queue.LatencyBuckets), Failed: 2}
	const n = 20_000
	for range n {
		// Spread evenly in logarithm over every bound and past the last: 10µs to 70s.
		d := time.Duration(math.Exp(math.Log(10)+rnd.Float64()*math.Log(7e6))) * time.Microsecond
		if d%(time.Microsecond<<12) == 0 {
			continue // exactly on a bound: see below
		}
		s.Latency[queue.LatencyBucket(d)]++
		total += d
		for j, bound := range ttfbBounds {
			if d.Seconds() <= bound {
				want[j]++
			}
		}
	}
	h.Add("r", &s, total)
	h.Add("r", &queue.Sample{}, 0) // nothing measured adds nothing

	ch := make(chan prometheus.Metric, 1)
	h.Collect(ch)
	var m dto.Metric
	if err := (<-ch).Write(&m); err != nil {
		t.Fatal(err)
	}
	hist := m.GetHistogram()
	if hist.GetSampleCount() != s.Count() {
		t.Fatalf("count %d, want %d", hist.GetSampleCount(), s.Count())
	}
	if got := hist.GetSampleSum(); got != total.Seconds() {
		t.Fatalf("sum %v, want %v", got, total.Seconds())
	}
	for j, b := range hist.GetBucket() {
		if b.GetUpperBound() != ttfbBounds[j] || b.GetCumulativeCount() != want[j] {
			t.Errorf("bucket le=%v holds %d, want le=%v holding %d", b.GetUpperBound(), b.GetCumulativeCount(), ttfbBounds[j], want[j])
		}
	}
}
