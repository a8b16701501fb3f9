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

// storeCalls are one of each store call, for outage tests.
var storeCalls = map[string]func(context.Context, queue.Store) error{
	"Join": func(ctx context.Context, s queue.Store) error {
		_, err := s.Join(ctx, queue.NewVisitorID(), time.Now(), queue.Limits{Capacity: 1, SessionTTL: time.Minute, QueueTTL: time.Minute})
		return err
	},
	"Status": func(ctx context.Context, s queue.Store) error {
		_, err := s.Status(ctx, queue.NewVisitorID(), time.Now())
		return err
	},
	"Touch": func(ctx context.Context, s queue.Store) error {
		_, err := s.Touch(ctx, queue.NewVisitorID(), time.Now())
		return err
	},
	"Heartbeat": func(ctx context.Context, s queue.Store) error {
		return s.Heartbeat(ctx, []queue.VisitorID{queue.NewVisitorID()}, time.Now())
	},
	"Leave": func(ctx context.Context, s queue.Store) error {
		_, err := s.Leave(ctx, queue.NewVisitorID())
		return err
	},
	"Step": func(ctx context.Context, s queue.Store) error {
		_, err := s.Step(ctx, time.Now(), queue.Limits{Capacity: 1, SessionTTL: time.Minute, QueueTTL: time.Minute})
		return err
	},
	"Positions": func(ctx context.Context, s queue.Store) error {
		return s.Positions(ctx, []uint64{1, 2}, make([]int, 2))
	},
	"Stats": func(ctx context.Context, s queue.Store) error {
		_, err := s.Stats(ctx)
		return err
	},
	"Secret": func(ctx context.Context, s queue.Store) error {
		_, err := s.Secret(ctx, []byte("candidate"))
		return err
	},
}

func TestOutageAndRecovery(t *testing.T) {
	srv := testredis.Start(t)
	const timeout = 300 * time.Millisecond
	mod := provision(t, &Redis{URL: "redis://" + srv.Addr, Timeout: caddy.Duration(timeout)})
	s := open(t, mod)
	ctx := context.Background()
	lim := queue.Limits{Capacity: 1, SessionTTL: time.Minute, QueueTTL: time.Minute}

	var mu sync.Mutex
	delivered := map[queue.VisitorID]bool{}
	cancel := s.Subscribe(func(ids []queue.VisitorID) {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range ids {
			delivered[id] = true
		}
	})
	defer cancel()
	for name, call := range storeCalls {
		if err := call(ctx, s); err != nil {
			t.Fatalf("%s with Redis up: %v", name, err)
		}
	}

	srv.Stop()
	before := runtime.NumGoroutine()
	const callers = 50
	var wg sync.WaitGroup
	for name, call := range storeCalls {
		for range callers {
			wg.Go(func() {
				start := time.Now()
				err := call(ctx, s)
				took := time.Since(start)
				if err == nil {
					t.Errorf("%s with Redis down returned no error", name)
				}
				if ratio := float64(took) / float64(timeout); ratio > 3 {
					t.Errorf("%s with Redis down took %.2f timeouts, want at most 3", name, ratio)
				}
			})
		}
	}
	wg.Wait()
	// Goroutines started for the calls must be gone again (allow go-redis a few for
	// reconnecting).
	deadline := time.Now().Add(10 * timeout)
	for runtime.NumGoroutine() > before+5 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+5 {
		t.Fatalf("%d goroutines after %d failed calls, %d before: they pile up", n, callers*len(storeCalls), before)
	}

	srv.Restart()
	restarted := time.Now()
	for {
		_, err := s.Stats(ctx)
		if err == nil {
			break
		}
		if time.Since(restarted) > 20*timeout {
			t.Fatalf("store calls still fail 20 timeouts after Redis came back: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("calls work again %v after the restart", time.Since(restarted))

	// Pub/Sub resubscribes by itself: keep admitting until an admission is delivered.
	for {
		holder := queue.NewVisitorID()
		if _, err := s.Join(ctx, holder, time.Now(), lim); err != nil {
			t.Fatal(err)
		}
		waiter := queue.NewVisitorID()
		if _, err := s.Join(ctx, waiter, time.Now(), lim); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Leave(ctx, holder); err != nil {
			t.Fatal(err)
		}
		res, err := s.Step(ctx, time.Now(), lim)
		admitted := res.Admitted
		if err != nil || len(admitted) != 1 || admitted[0] != waiter {
			t.Fatalf("Step = %v, %v; want the waiter", admitted, err)
		}
		time.Sleep(100 * time.Millisecond)
		mu.Lock()
		ok := delivered[waiter]
		mu.Unlock()
		if ok {
			break
		}
		if time.Since(restarted) > 40*timeout {
			t.Fatal("no admission delivered to the subscriber 40 timeouts after Redis came back")
		}
		if _, err := s.Leave(ctx, waiter); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("Subscribe delivers again %v after the restart", time.Since(restarted))
}

// A Redis that is not there does not fail provisioning or opening a room; calls fail
// fast.
func TestUnreachableRedisProvisions(t *testing.T) {
	const timeout = 200 * time.Millisecond
	mod := provision(t, &Redis{Addresses: []string{"127.0.0.1:1"}, Timeout: caddy.Duration(timeout)})
	s := open(t, mod)
	start := time.Now()
	_, err := s.Stats(context.Background())
	if err == nil {
		t.Fatal("Stats against no Redis returned no error")
	}
	if ratio := float64(time.Since(start)) / float64(timeout); ratio > 2 {
		t.Fatalf("Stats against no Redis took %.2f timeouts, want at most 2", ratio)
	}
	// Subscribing waits at most the timeout, then resubscribes in the background.
	start = time.Now()
	cancel := s.Subscribe(func([]queue.VisitorID) {})
	cancel()
	if ratio := float64(time.Since(start)) / float64(timeout); ratio > 2 {
		t.Fatalf("Subscribe against no Redis took %.2f timeouts, want at most 2", ratio)
	}
}
