package redisstore

import (
	"context"
	goflag "flag"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/fairness"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

var drawWaiters = goflag.Int("draw.waiters", 1_000_000, "waiters in BenchmarkDrawMillion's pre-queue")

// callTimes records, through a go-redis hook, how long each command or script call
// took from the client's side (the wait for Redis included), and the longest.
type callTimes struct {
	mu      sync.Mutex
	longest time.Duration
	what    string
	calls   int
	total   time.Duration
}

func (c *callTimes) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *callTimes) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		d := time.Since(start)
		c.mu.Lock()
		c.calls++
		c.total += d
		if d > c.longest {
			c.longest, c.what = d, cmd.Name()
			if cmd.Name() == "evalsha" && len(cmd.Args()) > 1 {
				c.what = fmt.Sprint("evalsha ", cmd.Args()[1])
			}
		}
		c.mu.Unlock()
		return err
	}
}

func (c *callTimes) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// BenchmarkDrawMillion is the draw of an event's lottery with a million waiters in its
// pre-queue on one Redis master, as the room runs it (internal/fairness): the close,
// every instance's reading of the entrants and working out of the order, and the
// placing of the order into the line in chunks. It reports the draw's duration, the
// work in Go, and the longest single call to Redis, from the client's side and as
// Redis's SLOWLOG saw it, beside the store's timeout: no call may hold Redis that
// long. It checks the line's head against the order before it reports.
//
//	go test -run '^$' -bench DrawMillion -benchtime 1x ./waitingroom/redisstore/
func BenchmarkDrawMillion(b *testing.B) {
	_, s := benchStore(b)
	ctx := context.Background()
	n := *drawWaiters
	start := time.Now().Add(time.Hour).Truncate(time.Second)
	lottery := start.Format(time.RFC3339Nano)
	d := fairness.New("bench", "/draw", nil, nil)
	d.SetSecrets([][]byte{[]byte("the draw benchmark's secret, 32 bytes or more")})
	fail := func(op string, err error) { b.Fatalf("%s: %v", op, err) }
	want := fairness.Want{Lottery: lottery, Start: start, Prequeue: true, Reads: 2}
	d.Advance(ctx, s, time.Now(), want, fail)

	// The pre-queue: n waiters, 128 joins at a time (the store batches them).
	hold := benchLimits
	hold.Hold, hold.QueueTTL = true, 24*time.Hour
	fill := time.Now()
	var wg sync.WaitGroup
	work := make(chan int)
	for range 128 {
		wg.Go(func() {
			for range work {
				if _, err := s.Join(ctx, queue.NewVisitorID(), time.Now(), hold); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	b.Logf("%d waiters joined in %v", n, time.Since(fill).Round(time.Millisecond))

	calls := &callTimes{}
	s.shared.client.AddHook(calls)
	if err := s.shared.client.Do(ctx, "SLOWLOG", "RESET").Err(); err != nil {
		b.Fatal(err)
	}
	if err := s.shared.client.ConfigSet(ctx, "slowlog-log-slower-than", "1000").Err(); err != nil {
		b.Fatal(err)
	}
	want.Prequeue = false
	var took time.Duration
	for b.Loop() {
		began := time.Now()
		for i := 0; ; i++ {
			plan := d.Advance(ctx, s, start, want, fail)
			if rec := d.Current(); rec.State == queue.DrawDrawn {
				break
			} else if !plan.Hold {
				b.Fatalf("not holding while the draw is %v", rec.State)
			}
			if i > 10_000 {
				b.Fatal("the draw was never placed")
			}
		}
		took = time.Since(began)
	}
	rec := d.Current()
	if rec.Entrants != n || rec.Done != n {
		b.Fatalf("drawn with %d entrants, %d placed; %d joined", rec.Entrants, rec.Done, n)
	}
	// The head of the line is the order's: positions 1..k are the first k places.
	page, err := d.Page(ctx, s, "", start)
	if err != nil || page.Entrants != uint64(n) {
		b.Fatalf("the page: %+v, %v", page, err)
	}
	tickets := make([]uint64, 1000)
	for i := range tickets {
		tickets[i] = rec.First + uint64(i+1)
	}
	positions := make([]int, len(tickets))
	if err := s.Positions(ctx, tickets, positions); err != nil {
		b.Fatal(err)
	}
	for i, p := range positions {
		if p != i+1 {
			b.Fatalf("place %d is at position %d", i+1, p)
		}
	}
	var slowest time.Duration
	var slowCmd string
	for _, e := range s.shared.client.SlowLogGet(ctx, 128).Val() {
		if e.Duration > slowest {
			slowest, slowCmd = e.Duration, fmt.Sprint(e.Args[:min(2, len(e.Args))])
		}
	}
	b.Logf("the draw of %d: %v, %v of it in %d calls to Redis; longest call %v (%s); longest in Redis's slowlog %v (%s); the store's timeout %v",
		n, took.Round(time.Millisecond), calls.total.Round(time.Millisecond), calls.calls, calls.longest.Round(time.Microsecond),
		calls.what, slowest, slowCmd, s.timeout)
	b.ReportMetric(took.Seconds(), "draw_s")
	b.ReportMetric(float64(calls.longest.Microseconds())/1000, "longest_call_ms")
	b.ReportMetric(float64(slowest.Microseconds())/1000, "longest_in_redis_ms")
	b.ReportMetric(float64(s.timeout.Milliseconds()), "timeout_ms")
	b.ReportMetric(float64(calls.calls), "calls")
	b.ReportMetric(calls.total.Seconds(), "in_calls_s")
}
