package caddytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// A `caddy reload` in the middle of a surge, under churn: sessions lapse, admitted
// visitors check out (revoke), waiters are admitted and new visitors keep arriving all
// through it. No waiter loses its place (a socket closed with 1012 reconnects and is
// told the same place or better), every waiter is admitted in the end, the new settings
// apply, and capacity is never exceeded by the old and new config running side by
// side: neither in the room's own count (sampled through the admin API) nor in the
// number of waiters who know they are inside at once.
func TestLiveReloadUnderLoad(t *testing.T) {
	const capacity, n = 3, 20
	room := uniqueRoom(t)
	opts := fmt.Sprintf("capacity %d\n\t\tsession_ttl 10s", capacity)
	startLive(t, room, opts)
	for range capacity { // these never come back: their sessions lapse after 10 s
		if _, ok := newVisitor(t).place("/"); !ok {
			t.Fatal("filling the room: not admitted")
		}
	}
	waiters := make([]*visitor, n)
	for i := range waiters {
		waiters[i] = newVisitor(t)
		if q, _ := waiters[i].place("/"); q.Position != i+1 {
			t.Fatalf("waiter %d at %d", i+1, q.Position)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var failures failureLog
	fail := failures.add
	var churn churnCount
	reloaded := make(chan struct{})
	var wg sync.WaitGroup
	for i, v := range waiters {
		wg.Go(func() {
			if err := waitThenShop(v, &churn, i+1); err != nil {
				fail("waiter %d: %v", i+1, err)
			}
		})
	}
	// New visitors keep arriving (and never come back).
	var arrived atomic.Int64
	var background sync.WaitGroup
	for range 2 {
		background.Go(func() {
			for ctx.Err() == nil {
				if _, _, err := newVisitor(t).tryPlace("/"); err != nil {
					fail("arrival: %v", err)
					return
				}
				arrived.Add(1)
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	// The room's own count of active visitors, through the admin API.
	var samples, maxActive atomic.Int64
	background.Go(func() {
		for ctx.Err() == nil {
			info, err := tryRoomInfo(room)
			if err != nil {
				fail("admin sampler: %v", err)
				return
			}
			samples.Add(1)
			if int64(info.Active) > maxActive.Load() {
				maxActive.Store(int64(info.Active))
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	// Reload once the churn is under way: the first sessions have lapsed and waiters
	// are being admitted.
	go func() {
		defer close(reloaded)
		for churn.admitted.Load() < capacity && failures.count() == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		churn.admittedAtFault.Store(churn.admitted.Load())
	}()
	<-reloaded
	startLive(t, room, opts+"\n\t\tstatus_code 202")
	admittedAfter := churn.admitted.Load()
	wg.Wait()
	// The new settings apply: a new waiter gets 202.
	code, _, _, err := newVisitor(t).tryGet("/", "application/json")
	cancel()
	background.Wait()
	failures.report(t)
	if err != nil || code != http.StatusAccepted {
		t.Fatalf("a new waiter after the reload got %d (%v), want the new status_code 202", code, err)
	}
	t.Logf("%d waiters admitted and checked out (%d before the reload started, %d by the time it was done), %d sockets closed by the reload and reconnected, %d checkouts sent again, %d arrivals; %d admin samples, active at most %d, at most %d waiters inside at once",
		churn.admitted.Load(), churn.admittedAtFault.Load(), admittedAfter, churn.reconnects.Load(), churn.resent.Load(), arrived.Load(), samples.Load(), maxActive.Load(), churn.maxInside.Load())
	switch {
	case churn.admitted.Load() != n:
		t.Fatalf("%d of %d waiters admitted", churn.admitted.Load(), n)
	case churn.reconnects.Load() == 0:
		t.Fatal("no waiter's socket was closed by the reload: nobody was waiting through it")
	case churn.admittedAtFault.Load() >= n:
		t.Fatal("every waiter was admitted before the reload: no admission during it")
	case samples.Load() < 20:
		t.Fatalf("only %d admin samples", samples.Load())
	case maxActive.Load() > capacity:
		t.Fatalf("active reached %d with capacity %d during the reload", maxActive.Load(), capacity)
	case churn.maxInside.Load() > capacity:
		t.Fatalf("%d waiters were inside at once with capacity %d", churn.maxInside.Load(), capacity)
	}
}

// waitThenShop is one waiter: it holds the waiting page's socket (reconnecting when a
// reload closes it with 1012, and never told a worse place), then, admitted, goes in,
// stays a moment and checks out, which frees the slot for the next.
func waitThenShop(v *visitor, churn *churnCount, position int) error {
	ctx := context.Background()
	c, err := v.trySocket(ctx, "/")
	if err != nil {
		return err
	}
	defer func() { c.CloseNow() }()
	for {
		rctx, cancel := context.WithTimeout(ctx, eventDeadline)
		_, data, err := c.Read(rctx)
		cancel()
		var ce websocket.CloseError
		if errors.As(err, &ce) && ce.Code == websocket.StatusServiceRestart {
			churn.reconnects.Add(1)
			if c, err = v.trySocket(ctx, "/"); err != nil {
				return fmt.Errorf("reconnecting after the reload: %w", err)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("reading the socket: %w", err)
		}
		var m queueAnswer
		if err := json.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("bad message %q", data)
		}
		if m.Type == "admitted" {
			break
		}
		if m.Type != "position" || m.Position < 1 || m.Position > position {
			return fmt.Errorf("told %+v, had position %d", m, position)
		}
		position = m.Position
	}
	if _, ok, err := v.tryPlace("/"); err != nil || !ok {
		return fmt.Errorf("told admitted, then not let in: %v", err)
	}
	churn.admitted.Add(1)
	churn.enter()
	time.Sleep(100 * time.Millisecond)
	churn.inside.Add(-1) // before the checkout frees the slot
	_, _, body, err := v.tryGet("/checkout", "")
	if err != nil {
		// The harness reloads with a grace period of 1ns, so the old config's server
		// drops the connections it holds: a checkout sent on one at that instant gets
		// no answer, and is sent again, as a browser does. Had the room taken the
		// first, the second would come as a new visitor's and fail below.
		churn.resent.Add(1)
		_, _, body, err = v.tryGet("/checkout", "")
	}
	if err != nil || body != "order placed" {
		return fmt.Errorf("checkout: %q %v", body, err)
	}
	return nil
}
