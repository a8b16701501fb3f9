package caddytest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// TestMultiInstanceKilledUnderLoad: one of three instances is killed (SIGKILL) under
// churn: sessions lapse, admitted visitors check out (revoke) and waiters are admitted
// all through it, while new visitors keep arriving on the survivors and twenty waiters
// hold WebSockets on the one that dies. Its waiters reconnect to the others and are
// never told a worse place; every waiter is admitted in the end; capacity is never
// exceeded, neither in the store's active set (sampled straight from Redis) nor in the
// number of waiters inside at once; the survivors stay up.
func TestMultiInstanceKilledUnderLoad(t *testing.T) {
	srv := testredis.Start(t)
	room := uniqueRoom(t)
	const capacity, n = 5, 20
	f := startFleet(t, 3, func(int) string {
		return roomBlock(room, "/shop*", capacity, "redis redis://"+srv.Addr, "session_ttl 10s")
	})
	rdb := newRedisClient(t, srv.Addr)
	victim, a, b := f.nodes[0], f.nodes[1], f.nodes[2]

	for range capacity { // these never come back: their sessions lapse after 2 s
		if _, ok, err := newGuest().place(a.base, "/shop"); err != nil || !ok {
			t.Fatalf("filling the room: admitted=%v %v", ok, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waiters := make([]*guest, n)
	for i := range waiters {
		waiters[i] = newGuest()
		q, ok, err := waiters[i].place(victim.base, "/shop")
		if err != nil || ok || q.Position != i+1 {
			t.Fatalf("waiter %d on the victim: admitted=%v position %d %v", i+1, ok, q.Position, err)
		}
	}

	var failures failureLog
	fail := failures.add
	var churn churnCount
	var killed atomic.Bool
	survivors := []*node{a, b}
	var wg sync.WaitGroup
	for i, g := range waiters {
		wg.Go(func() {
			if err := fleetWaitThenShop(ctx, g, &churn, i+1, victim, survivors[i%2], &killed); err != nil {
				fail("waiter %d: %v", i+1, err)
			}
		})
	}
	var background sync.WaitGroup
	var joined atomic.Int64
	for _, nd := range survivors {
		background.Go(func() {
			for ctx.Err() == nil {
				if _, _, err := newGuest().place(nd.base, "/shop"); err != nil {
					fail("arrival on %s: %v", nd.name, err)
					return
				}
				joined.Add(1)
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	var samples, maxActive atomic.Int64
	background.Go(func() {
		for ctx.Err() == nil {
			n, err := rdb.ZCard(ctx, roomKey(room, "active")).Result()
			if err != nil {
				if ctx.Err() == nil {
					fail("active sampler: %v", err)
				}
				return
			}
			samples.Add(1)
			if n > maxActive.Load() {
				maxActive.Store(n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	// Kill the victim once the churn is under way.
	for churn.admitted.Load() < 2 && failures.count() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	churn.admittedAtFault.Store(churn.admitted.Load())
	killed.Store(true)
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-victim.exited
	wg.Wait()
	cancel()
	background.Wait()
	failures.report(t)
	t.Logf("%d waiters admitted and checked out (%d before the kill), %d reconnected to a survivor, %d arrivals; %d samples of the active set, at most %d active, at most %d waiters inside at once",
		churn.admitted.Load(), churn.admittedAtFault.Load(), churn.reconnects.Load(), joined.Load(), samples.Load(), maxActive.Load(), churn.maxInside.Load())
	switch {
	case churn.admitted.Load() != n:
		t.Fatalf("%d of %d waiters admitted", churn.admitted.Load(), n)
	case churn.reconnects.Load() == 0:
		t.Fatal("no waiter was on the victim when it died")
	case samples.Load() < 20:
		t.Fatalf("only %d samples of the active set", samples.Load())
	case maxActive.Load() > capacity:
		t.Fatalf("active reached %d with capacity %d", maxActive.Load(), capacity)
	case churn.maxInside.Load() > capacity:
		t.Fatalf("%d waiters were inside at once with capacity %d", churn.maxInside.Load(), capacity)
	}
	f.nodes = survivors // the victim is gone; the survivors must still be up
	f.requireUp()
}

// fleetWaitThenShop is one waiter of a fleet: it holds its socket on first (moving to
// then when first has been killed, and never told a worse place), then, admitted,
// goes in on then, stays a moment and checks out.
func fleetWaitThenShop(ctx context.Context, g *guest, churn *churnCount, position int, first, then *node, killed *atomic.Bool) error {
	nd := first
	c, err := g.socket(ctx, nd.base, "/shop")
	if err != nil {
		return err
	}
	defer func() { c.CloseNow() }()
	for {
		rctx, cancel := context.WithTimeout(ctx, eventDeadline)
		_, data, err := c.Read(rctx)
		cancel()
		if err != nil && nd == first && killed.Load() {
			churn.reconnects.Add(1)
			nd = then
			if c, err = g.socket(ctx, nd.base, "/shop"); err != nil {
				return fmt.Errorf("reconnecting to %s: %w", nd.name, err)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("reading the socket on %s: %w", nd.name, err)
		}
		var m queueAnswer
		if err := json.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("bad message %q", data)
		}
		if m.Type == "admitted" {
			break
		}
		if m.Type != "position" || m.Position < 1 || m.Position > position {
			return fmt.Errorf("told %+v on %s, had position %d", m, nd.name, position)
		}
		position = m.Position
	}
	if _, ok, err := g.place(then.base, "/shop"); err != nil || !ok {
		return fmt.Errorf("told admitted, then not let in on %s: %v", then.name, err)
	}
	churn.admitted.Add(1)
	churn.enter()
	time.Sleep(100 * time.Millisecond)
	churn.inside.Add(-1) // before the checkout frees the slot
	if _, body, err := g.get(then.base, "/shop/done", ""); err != nil || body != "done" {
		return fmt.Errorf("checkout on %s: %q %v", then.name, body, err)
	}
	return nil
}
