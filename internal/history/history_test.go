package history

import (
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// The history keeps a point a minute for the last hour: the room's admissions in each
// minute (differences of the store's counter), the quantiles of the waits this
// instance saw, and the minute in progress as a partial point.
func TestHistoryMinutes(t *testing.T) {
	hs := &History{rng: 1}
	t0 := time.Date(2030, 11, 28, 9, 0, 0, 0, time.UTC)
	admitted := uint64(100) // a counter that did not start at this instance's start
	for m := range 90 {
		for s := 0; s < 60; s += 15 {
			now := t0.Add(time.Duration(m)*time.Minute + time.Duration(s)*time.Second)
			admitted += uint64(m % 7)
			hs.Observe(now, &queue.Stats{Active: 3, Waiting: m, AdmittedTotal: admitted})
			if m%2 == 0 {
				for w := 1; w <= 10; w++ {
					hs.Wait(now, time.Duration(w)*time.Second)
				}
			}
		}
	}
	now := t0.Add(90*time.Minute - time.Second)
	pts := hs.Snapshot(now)
	if len(pts) != pointsKept+1 {
		t.Fatalf("%d points, want the last hour (%d) and the minute in progress", len(pts), pointsKept)
	}
	for i, p := range pts {
		m := 90 - len(pts) + i
		if !p.At.Equal(t0.Add(time.Duration(m) * time.Minute)) {
			t.Fatalf("point %d is at %v, want minute %d", i, p.At, m)
		}
		// The first reading of a minute carries the admissions since the last reading
		// of the one before: four readings a minute, each adding m%7.
		if want := uint64(4 * (m % 7)); p.Admissions != want {
			t.Fatalf("minute %d: %d admissions, want %d", m, p.Admissions, want)
		}
		if p.Waiting != m || p.Active != 3 || p.Partial != (i == len(pts)-1) {
			t.Fatalf("minute %d: %+v", m, p)
		}
		if m%2 == 1 {
			if p.WaitP50Seconds != nil || p.Waits != 0 {
				t.Fatalf("minute %d saw no waits, yet %+v", m, p)
			}
			continue
		}
		if p.Waits != 40 || p.WaitP50Seconds == nil || *p.WaitP50Seconds != 5 || *p.WaitP90Seconds != 9 {
			t.Fatalf("minute %d: %d waits, p50 %v, p90 %v; want 40, 5 and 9", m, p.Waits, p.WaitP50Seconds, p.WaitP90Seconds)
		}
	}
}

// A minute of more waits than it keeps still gives its quantiles, from a sample.
func TestHistoryManyWaits(t *testing.T) {
	hs := &History{rng: 7}
	t0 := time.Date(2030, 11, 28, 9, 0, 0, 0, time.UTC)
	hs.Observe(t0, &queue.Stats{})
	for i := range 100 * waitsKept {
		hs.Wait(t0.Add(time.Second), time.Duration(i%100+1)*time.Second)
	}
	p := hs.Snapshot(t0.Add(2 * time.Second))[0]
	if p.Waits != waitsKept || *p.WaitP50Seconds < 45 || *p.WaitP50Seconds > 55 || *p.WaitP90Seconds < 85 || *p.WaitP90Seconds > 95 {
		t.Fatalf("%d waits kept, p50 %v, p90 %v (uniform waits of 1..100 s)", p.Waits, *p.WaitP50Seconds, *p.WaitP90Seconds)
	}
}

// Each minute keeps the capacity in force at its end, the adaptive capacity's target,
// and the p90 of the shop's time to first byte over every sample taken in it; a
// minute with no request through the room has no p90, and adapt off has no target.
func TestHistoryShop(t *testing.T) {
	hs := &History{rng: 1}
	t0 := time.Date(2030, 11, 28, 9, 0, 0, 0, time.UTC)
	sample := func(d time.Duration, n uint64) *queue.Sample {
		s := &queue.Sample{Latency: make([]uint64, queue.LatencyBuckets)}
		s.Latency[queue.LatencyBucket(d)] = n
		return s
	}
	hs.Observe(t0, &queue.Stats{})
	hs.Settings(t0, 50, 800*time.Millisecond)
	hs.Measured(t0.Add(2*time.Second), sample(100*time.Millisecond, 90))
	hs.Measured(t0.Add(4*time.Second), sample(2*time.Second, 20)) // the slowest 18 %
	hs.Settings(t0.Add(59*time.Second), 40, 800*time.Millisecond)
	hs.Settings(t0.Add(61*time.Second), 40, 0) // adapt turned off; no request this minute
	pts := hs.Snapshot(t0.Add(90 * time.Second))
	if len(pts) != 2 {
		t.Fatalf("%d points, want 2", len(pts))
	}
	first, second := pts[0], pts[1]
	if first.Capacity != 40 || first.TargetSeconds == nil || *first.TargetSeconds != 0.8 {
		t.Errorf("first minute: capacity %d, target %v; want 40 (its last), 0.8", first.Capacity, first.TargetSeconds)
	}
	if p := first.ShopP90Seconds; p == nil || *p < 2 || *p > 2.25 {
		t.Errorf("first minute's shop p90 = %v, want about 2s (18 of 110 took 2s)", p)
	}
	if second.ShopP90Seconds != nil || second.TargetSeconds != nil || second.Capacity != 40 {
		t.Errorf("second minute: p90 %v, target %v, capacity %d; want none, none, 40", second.ShopP90Seconds, second.TargetSeconds, second.Capacity)
	}
}
