package redisstore

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkHeldQueue keeps n waiters, every one held by this instance, present for one
// queue_ttl per iteration: the lease renewed every 20 s and a step every second, as a
// hub and its room do, on a clock the benchmark moves. It reports Redis's CPU time per
// waiter per queue_ttl: what keeping an idle line alive costs the one Redis a fleet
// shares, which at a million waiters must stay a small part of a core.
func BenchmarkHeldQueue(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("queued=%d", n), func(b *testing.B) {
			srv, s := benchStore(b)
			ids, _ := fillQueue(b, s, n)
			ctx := context.Background()
			lim := benchLimits
			lim.QueueTTL, lim.AwayTTL = time.Minute, 10*time.Minute
			at := time.Now()
			if err := s.Hold(ctx, ids, at); err != nil {
				b.Fatal(err)
			}
			keepFor := func(d time.Duration) {
				for end := at.Add(d); at.Before(end); {
					at = at.Add(time.Second)
					if at.Unix()%20 == 0 {
						if err := s.Hold(ctx, nil, at); err != nil {
							b.Fatal(err)
						}
					}
					if _, err := s.Step(ctx, at, lim); err != nil {
						b.Fatal(err)
					}
				}
			}
			// The first queue_ttl finds the joins' heard times due, and the sweeps over
			// them take a few steps; what is measured is the line after that.
			keepFor(2 * lim.QueueTTL)
			u0 := usageOf(b, srv)
			b.ResetTimer()
			for range b.N {
				keepFor(lim.QueueTTL)
			}
			b.StopTimer()
			u := usageOf(b, srv)
			b.ReportMetric(float64((u.cpu-u0.cpu).Microseconds())/float64(b.N)/float64(n), "redis_cpu_µs/waiter/queue_ttl")
			b.ReportMetric(float64(u.total-u0.total)/float64(b.N)/float64(n), "redis_cmds/waiter/queue_ttl")
			st, err := s.Stats(ctx)
			if err != nil || st.Waiting != n || st.Away != 0 {
				b.Fatalf("after %d queue_ttls: %+v %v, want all %d held waiters present", b.N, st, err, n)
			}
		})
	}
}
