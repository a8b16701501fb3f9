package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// testReportsAddUp: the reports made for a control period, from any number of callers
// at once, add up to that period's sample, and another period's are apart.
func testReportsAddUp(t *testing.T, open Open) {
	s := open(t)
	ctx := context.Background()
	one := queue.Sample{Latency: make([]uint64, queue.LatencyBuckets), Failed: 1}
	one.Latency[queue.LatencyBucket(5*time.Millisecond)] = 3
	one.Latency[queue.LatencyBucket(2*time.Second)] = 1
	const reports = 20
	var wg sync.WaitGroup
	for range reports {
		wg.Go(func() {
			if err := s.Report(ctx, 7, one); err != nil {
				t.Errorf("Report: %v", err)
			}
		})
	}
	wg.Wait()
	if err := s.Report(ctx, 8, one); err != nil {
		t.Fatal(err)
	}
	got, err := s.Measured(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	if got.Count() != 4*reports || got.Failed != reports {
		t.Fatalf("period 7 holds %d requests, %d failed; want %d, %d", got.Count(), got.Failed, 4*reports, reports)
	}
	if n := got.Latency[queue.LatencyBucket(2*time.Second)]; n != reports {
		t.Fatalf("the 2s bucket holds %d, want %d", n, reports)
	}
	if p := got.Percentile(0.9); p < 2*time.Second {
		t.Fatalf("p90 = %v, want at least 2s (a quarter of the requests took 2s)", p)
	}
	if got, _ := s.Measured(ctx, 8); got.Count() != 4 {
		t.Fatalf("period 8 holds %d requests, want 4", got.Count())
	}
	if got, _ := s.Measured(ctx, 6); got.Count() != 0 || got.Failed != 0 {
		t.Fatalf("period 6, never reported to, holds %d requests and %d failures", got.Count(), got.Failed)
	}
	// Nothing measured is nothing to add, not an error.
	if err := s.Report(ctx, 9, queue.Sample{}); err != nil {
		t.Fatalf("an empty report: %v", err)
	}
}
