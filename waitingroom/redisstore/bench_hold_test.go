package redisstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
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

// BenchmarkStepAdmits is the moving line's step: each operation admits 12 waiters from
// the head of a line of 100k (what each of 20 instances' steps admits at 1,000 a second
// with a step every 250 ms), under a rate limit as a sale runs. It reports Redis's
// commands and CPU time per admission.
func BenchmarkStepAdmits(b *testing.B) {
	const perStep = 12
	srv, s := benchStore(b)
	ids, _ := fillQueue(b, s, 100_000)
	ctx := context.Background()
	lim := benchLimits
	lim.QueueTTL, lim.AwayTTL = time.Minute, 10*time.Minute
	lim.Capacity, lim.Rate, lim.RatePer = 1<<30, 1000, time.Second
	at := time.Now()
	if err := s.Hold(ctx, ids, at); err != nil {
		b.Fatal(err)
	}
	if b.N*perStep > len(ids) {
		b.Fatalf("%d steps of %d admissions empty the line of %d", b.N, perStep, len(ids))
	}
	u0 := usageOf(b, srv)
	b.ResetTimer()
	admitted := 0
	for range b.N {
		// 12 ms apart: the rate (1,000 a second) allows 12 more every step.
		at = at.Add(12 * time.Millisecond)
		res, err := s.Step(ctx, at, lim)
		if err != nil {
			b.Fatal(err)
		}
		for _, id := range res.Admitted {
			if id != ids[admitted] {
				b.Fatalf("admission %d is not the head of the line", admitted)
			}
			admitted++
		}
	}
	b.StopTimer()
	u := usageOf(b, srv)
	if admitted < b.N*perStep*9/10 {
		b.Fatalf("%d steps admitted %d, want about %d each", b.N, admitted, perStep)
	}
	b.ReportMetric(float64(u.total-u0.total)/float64(admitted), "redis_cmds/admission")
	b.ReportMetric(float64((u.cpu-u0.cpu).Microseconds())/float64(admitted), "redis_cpu_µs/admission")
}

// BenchmarkHoldJoined is a hub's round holding the sockets opened since its last: each
// operation holds 25 waiters who joined in the meantime (50 joins a second on each of
// 20 instances, with a round every 500 ms), spread over a line of 100k as a fleet's
// joins interleave. It reports Redis's commands and CPU time per waiter held.
func BenchmarkHoldJoined(b *testing.B) {
	const perHold = 25
	srv, s := benchStore(b)
	ids, _ := fillQueue(b, s, 100_000)
	if b.N*perHold > len(ids) {
		b.Fatalf("%d holds of %d waiters need more than a line of %d", b.N, perHold, len(ids))
	}
	ctx, at := context.Background(), time.Now()
	u0 := usageOf(b, srv)
	b.ResetTimer()
	for i := range b.N {
		batch := make([]queue.VisitorID, perHold)
		for j := range batch {
			// Every 20th waiter from this op's place: the others joined elsewhere.
			batch[j] = ids[(i*perHold+j*20)%len(ids)]
		}
		if err := s.Hold(ctx, batch, at); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	u := usageOf(b, srv)
	held := float64(b.N * perHold)
	b.ReportMetric(float64(u.total-u0.total)/held, "redis_cmds/waiter")
	b.ReportMetric(float64((u.cpu-u0.cpu).Microseconds())/held, "redis_cpu_µs/waiter")
}
