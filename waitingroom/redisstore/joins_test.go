package redisstore

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
	"github.com/caddy-waitingroom/caddy-waitingroom/waitingroom"
)

// A surge of concurrent joins is batched into fewer round trips, and each visitor is
// still decided as if it came alone: exactly capacity admitted, the rest queued with
// distinct tickets whose positions are 1..n. Joins under different limits (a reload
// between them) are never decided under each other's limits.
func TestJoinsAreBatchedAndExact(t *testing.T) {
	srv := testredis.Start(t)
	mod := provision(t, &Redis{URL: "redis://" + srv.Addr, Timeout: caddy.Duration(5 * time.Second)})
	s := open(t, mod)
	now := time.Unix(1_800_000_000, 0)
	small := waitingroom.Limits{Capacity: 10, SessionTTL: time.Hour, QueueTTL: time.Hour}
	large := small
	large.Capacity = 1000 // would admit everyone, if it leaked into the other joins

	const visitors = 400
	scripts0, _ := srv.Commands(t)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		admitted int
		queued   = map[int]bool{}
		tickets  = map[uint64]bool{}
	)
	for range visitors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := s.Join(context.Background(), waitingroom.NewVisitorID(), now, small)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			switch st.State {
			case waitingroom.Admitted:
				admitted++
			case waitingroom.Queued:
				if queued[st.Position] || tickets[st.Ticket] {
					t.Errorf("position %d or ticket %d given twice", st.Position, st.Ticket)
				}
				queued[st.Position], tickets[st.Ticket] = true, true
			}
		}()
	}
	wg.Wait()
	scripts1, _ := srv.Commands(t)
	if admitted != 10 || len(queued) != visitors-10 {
		t.Fatalf("%d admitted and %d queued at capacity 10, want 10 and %d", admitted, len(queued), visitors-10)
	}
	for p := 1; p <= visitors-10; p++ {
		if !queued[p] {
			t.Fatalf("no waiter at position %d", p)
		}
	}
	calls := scripts1 - scripts0
	t.Logf("%d joins in %d script calls", visitors, calls)
	if calls >= visitors {
		t.Fatalf("%d joins took %d script calls: not batched", visitors, calls)
	}

	// Mixed limits in flight at once on an empty room: joins under capacity 10 are
	// admitted only while fewer than 10 are in, whatever the capacity-1000 joins beside
	// them do; had they been decided under the large limits, all 50 would be in.
	s = open(t, mod)
	var smallAdmitted int
	for i := range 100 {
		wg.Add(1)
		lim := small
		if i%2 == 0 {
			lim = large
		}
		go func() {
			defer wg.Done()
			st, err := s.Join(context.Background(), waitingroom.NewVisitorID(), now, lim)
			if err != nil {
				t.Error(err)
				return
			}
			if lim == small && st.State == waitingroom.Admitted {
				mu.Lock()
				smallAdmitted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if smallAdmitted > 10 {
		t.Fatalf("%d joins under capacity 10 were admitted", smallAdmitted)
	}
}

// A lone visitor's join is one script call, made for it alone, one visitor after
// another. A visitor who gives up (the request's context canceled) gets an error and
// the room goes on: the next join is decided as usual.
func TestLoneJoins(t *testing.T) {
	srv := testredis.Start(t)
	mod := provision(t, &Redis{URL: "redis://" + srv.Addr, Timeout: caddy.Duration(5 * time.Second)})
	s := open(t, mod)
	ctx, now := context.Background(), time.Unix(1_800_000_000, 0)
	lim := waitingroom.Limits{Capacity: 1, SessionTTL: time.Hour, QueueTTL: time.Hour}
	if _, err := s.Join(ctx, waitingroom.NewVisitorID(), now, lim); err != nil { // loads the script
		t.Fatal(err)
	}
	scripts0, _ := srv.Commands(t)
	const joins = 20
	for i := 1; i <= joins; i++ {
		st, err := s.Join(ctx, waitingroom.NewVisitorID(), now, lim)
		if err != nil || st.State != waitingroom.Queued || st.Position != i {
			t.Fatalf("join %d: %+v, %v; want queued at %d", i, st, err, i)
		}
	}
	if scripts1, _ := srv.Commands(t); scripts1-scripts0 != joins {
		t.Fatalf("%d lone joins took %d script calls", joins, scripts1-scripts0)
	}

	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Join(gone, waitingroom.NewVisitorID(), now, lim); !errors.Is(err, context.Canceled) {
		t.Fatalf("a join whose request was canceled: %v, want context.Canceled", err)
	}
	st, err := s.Join(ctx, waitingroom.NewVisitorID(), now, lim)
	stats, _ := s.Stats(ctx)
	if err != nil || st.State != waitingroom.Queued || st.Position != stats.Waiting {
		t.Fatalf("the join after a canceled one: %+v, %v, with %d waiting", st, err, stats.Waiting)
	}
}
