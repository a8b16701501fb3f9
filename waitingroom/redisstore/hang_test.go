package redisstore

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// hangTimeout is the store timeout of the hang tests; everything they assert about
// time is a ratio to it.
const hangTimeout = 300 * time.Millisecond

// A Redis that hangs (SIGSTOP) or a path that blackholes holds the calls written to it,
// and carries them out when it resumes. Every call made during the hang must fail
// within a small multiple of the timeout, and none of them may act afterwards: no place
// for a join answered as failed, no slot for a join that would have been admitted, no
// leave and no admission the caller was told had failed.
func TestHungRedisLeavesNothingBehind(t *testing.T) {
	faults := map[string]func(t *testing.T) (url string, hang, resume func()){
		"sigstop": func(t *testing.T) (string, func(), func()) {
			srv := testredis.Start(t)
			return "redis://" + srv.Addr, srv.Pause, srv.Resume
		},
		"blackhole": func(t *testing.T) (string, func(), func()) {
			srv := testredis.Start(t)
			p := testredis.StartProxy(t, srv.Addr)
			return "redis://" + p.Addr, p.Blackhole, p.Forward
		},
	}
	for name, fault := range faults {
		t.Run(name, func(t *testing.T) {
			url, hang, resume := fault(t)
			checkHangLeavesNothing(t, url, hang, resume)
		})
	}
}

func checkHangLeavesNothing(t *testing.T, url string, hang, resume func()) {
	mod := provision(t, &Redis{URL: url, Timeout: caddy.Duration(hangTimeout)})
	ctx := context.Background()
	now := time.Now()
	free := queue.Limits{Capacity: 2, SessionTTL: time.Minute, QueueTTL: time.Minute}
	full := queue.Limits{Capacity: 1, SessionTTL: time.Minute, QueueTTL: time.Minute}

	// Room a has a free slot: a join there would be admitted. Room b is full with one
	// waiter: a join there would be queued, an admin "admit 1" would admit the waiter.
	a, b := open(t, mod), open(t, mod)
	holderA, holderB, waiterB := queue.NewVisitorID(), queue.NewVisitorID(), queue.NewVisitorID()
	mustJoin(t, a, holderA, now, free, queue.Admitted)
	mustJoin(t, b, holderB, now, full, queue.Admitted)
	mustJoin(t, b, waiterB, now, full, queue.Queued)
	before := map[*roomStore]queue.Stats{a: stats(t, a), b: stats(t, b)}

	// Open several pooled connections, so the hung calls go out on open ones.
	var warm sync.WaitGroup
	for range 20 {
		warm.Go(func() { _, _ = a.Stats(ctx); _, _ = b.Stats(ctx) })
	}
	warm.Wait()
	goroutines := runtime.NumGoroutine()

	hang()
	type call struct {
		name string
		fn   func() error
	}
	var calls []call
	for range 10 {
		calls = append(calls,
			call{"join with a free slot", func() error { _, err := a.Join(ctx, queue.NewVisitorID(), time.Now(), free); return err }},
			call{"join into the queue", func() error { _, err := b.Join(ctx, queue.NewVisitorID(), time.Now(), full); return err }},
		)
	}
	calls = append(calls,
		call{"leave of an admitted visitor", func() error { _, err := a.Leave(ctx, holderA); return err }},
		call{"admin admit 1", func() error { _, err := b.AdmitNow(ctx, 1, time.Now(), full); return err }},
		call{"step", func() error { _, err := b.Step(ctx, time.Now(), free); return err }},
		call{"leave of a waiter", func() error { _, err := b.Leave(ctx, waiterB); return err }},
	)
	var (
		mu       sync.Mutex
		failed   int
		slowest  time.Duration
		which    string
		answered int
	)
	var wg sync.WaitGroup
	for _, c := range calls {
		wg.Go(func() {
			start := time.Now()
			err := c.fn()
			took := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			answered++
			if err == nil {
				t.Errorf("%s during the hang succeeded", c.name)
				return
			}
			failed++
			if took > slowest {
				slowest, which = took, c.name
			}
		})
	}
	wg.Wait()
	if answered != len(calls) || failed != len(calls) {
		t.Fatalf("%d of %d calls answered, %d failed", answered, len(calls), failed)
	}
	// A lone call waits one timeout; a join that queued behind one in flight waits for
	// its own deadline, also one timeout from its arrival.
	if ratio := float64(slowest) / float64(hangTimeout); ratio > 3 {
		t.Fatalf("slowest failed call (%s) took %.2f timeouts, want at most 3", which, ratio)
	}
	t.Logf("%d calls failed during the hang, the slowest (%s) after %.2f timeouts", failed, which, float64(slowest)/float64(hangTimeout))

	resume()
	attempts := awaitRecovery(t, a)
	t.Logf("the store answered again after %d attempts (each bounded by the timeout)", attempts)

	for s, want := range before {
		got := stats(t, s)
		if got != want {
			t.Errorf("after the hang, room counters %+v, before it %+v: a call the caller gave up on was carried out", got, want)
		}
	}
	if ok, err := a.Touch(ctx, holderA, time.Now()); err != nil || !ok {
		t.Errorf("the admitted visitor whose leave failed lost the slot: %v, %v", ok, err)
	}
	if st, err := b.Status(ctx, waiterB, time.Now()); err != nil || st.State != queue.Queued || st.Position != 1 {
		t.Errorf("the waiter whose admission and leave failed is %+v, %v; want queued at 1", st, err)
	}
	settled := settleGoroutines(goroutines + 2)
	if settled > goroutines+2 {
		t.Errorf("%d goroutines after the hang, %d before: they pile up", settled, goroutines)
	}
}

func mustJoin(t *testing.T, s *roomStore, id queue.VisitorID, now time.Time, lim queue.Limits, want queue.State) {
	t.Helper()
	st, err := s.Join(context.Background(), id, now, lim)
	if err != nil || st.State != want {
		t.Fatalf("Join = %+v, %v; want state %v", st, err, want)
	}
}

func stats(t *testing.T, s *roomStore) queue.Stats {
	t.Helper()
	st, err := s.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// awaitRecovery calls Stats until it succeeds and returns how many calls that took; it
// fails the test after 50 (50 timeouts at most).
func awaitRecovery(t *testing.T, s *roomStore) int {
	t.Helper()
	for n := 1; ; n++ {
		if _, err := s.Stats(context.Background()); err == nil {
			return n
		} else if n == 50 {
			t.Fatalf("the store still fails after %d calls: %v", n, err)
		}
		time.Sleep(hangTimeout / 10)
	}
}

// settleGoroutines waits (a bounded number of rounds) for the goroutine count to drop
// to want, and returns the last count.
func settleGoroutines(want int) int {
	n := runtime.NumGoroutine()
	for range 100 {
		if n <= want {
			break
		}
		time.Sleep(hangTimeout / 10)
		n = runtime.NumGoroutine()
	}
	return n
}

// A clock sample that is off (the Redis clock jumped, or a failover reached a master
// whose clock differs) makes the scripts refuse calls; the refusal itself brings a fresh
// sample, so the store recovers by itself, and no refused call acted.
func TestSkewedClockSampleRecovers(t *testing.T) {
	srv := testredis.Start(t)
	mod := provision(t, &Redis{URL: "redis://" + srv.Addr, Timeout: caddy.Duration(hangTimeout)})
	s := open(t, mod)
	lim := queue.Limits{Capacity: 5, SessionTTL: time.Minute, QueueTTL: time.Minute}
	mustJoin(t, s, queue.NewVisitorID(), time.Now(), lim, queue.Admitted)
	good := s.clock.sample.Load()
	// As if Redis's clock were an hour ahead of what the sample says.
	s.clock.sample.Store(&clockSample{redisMs: good.redisMs - time.Hour.Milliseconds(), received: good.received, rtt: good.rtt})
	refused := 0
	for n := 1; ; n++ {
		_, err := s.Join(context.Background(), queue.NewVisitorID(), time.Now(), lim)
		if err == nil {
			break
		}
		if !isDeadlineReply(err) {
			t.Fatalf("join with a skewed clock sample: %v; want a deadline reply", err)
		}
		refused++
		if n == 50 {
			t.Fatalf("joins still refused after %d calls", n)
		}
		time.Sleep(hangTimeout / 10)
	}
	if refused == 0 {
		t.Fatal("a deadline an hour in Redis's past was not refused")
	}
	if st := stats(t, s); st.Active != 2 {
		t.Fatalf("active = %d after %d refused joins and one that succeeded, want 2", st.Active, refused)
	}
	t.Logf("%d joins refused before the sample was fresh again", refused)
}
