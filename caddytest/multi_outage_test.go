package caddytest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// TestMultiRedisOutage stops the fleet's Redis mid-run and starts it again (empty:
// nothing is saved), with one room that fails open and one that fails closed on every
// instance. While Redis is down admitted visitors keep passing on their cookie on every
// instance, waiters and new visitors pass (open) or are told "temporarily unavailable"
// with a 503 (closed), and nothing crashes; once Redis is back, new visitors are
// admitted up to capacity and queued beyond it again, and a waiter is told "admitted"
// on another instance's WebSocket.
func TestMultiRedisOutage(t *testing.T) {
	srv := testredis.Start(t)
	open, closed := uniqueRoom(t), uniqueRoom(t)
	// Short timeouts keep each degraded request short; they are what an operator who
	// prefers a fast 503 to a slow page would set.
	store := "redis redis://" + srv.Addr + " {\n\t\t\ttimeout 250ms\n\t\t\tdial_timeout 250ms\n\t\t}"
	const capacity = 2
	f := startFleet(t, 3, func(int) string {
		return roomBlock(open, "/open*", capacity, store, "fail open", "session_ttl 1m") +
			roomBlock(closed, "/closed*", capacity, store, "fail closed", "session_ttl 1m")
	})
	rooms := []struct{ name, path, fail string }{{open, "/open", "open"}, {closed, "/closed", "closed"}}

	// Before: each room full (two admitted on node0) with one waiter.
	inside := map[string][]*guest{}
	waiter := map[string]*guest{}
	for _, r := range rooms {
		for range capacity {
			g := newGuest()
			if _, ok, err := g.place(f.nodes[0].base, r.path); err != nil || !ok {
				t.Fatalf("%s: visitor not admitted before the outage: %v", r.fail, err)
			}
			inside[r.fail] = append(inside[r.fail], g)
		}
		waiter[r.fail] = newGuest()
		if q, ok, err := waiter[r.fail].place(f.nodes[0].base, r.path); err != nil || ok || q.Position != 1 {
			t.Fatalf("%s: waiter before the outage: admitted=%v %+v %v", r.fail, ok, q, err)
		}
	}

	srv.Stop()
	down := time.Now()
	t.Log("redis stopped")
	for round := range 2 {
		for _, nd := range f.nodes {
			for _, r := range rooms {
				where := fmt.Sprintf("redis down, round %d, %s, fail %s", round, nd.name, r.fail)
				for _, g := range inside[r.fail] {
					if _, ok, err := g.place(nd.base, r.path+"/page"); err != nil || !ok {
						t.Fatalf("%s: admitted visitor stopped: %v", where, err)
					}
				}
				code, body, err := newGuest().get(nd.base, r.path, "application/json")
				if err != nil {
					t.Fatalf("%s: new visitor: %v", where, err)
				}
				wcode, wbody, err := waiter[r.fail].get(nd.base, r.path, "application/json")
				if err != nil {
					t.Fatalf("%s: waiter: %v", where, err)
				}
				if r.fail == "open" {
					if code != http.StatusOK || !strings.HasPrefix(body, "upstream ") ||
						wcode != http.StatusOK || !strings.HasPrefix(wbody, "upstream ") {
						t.Fatalf("%s: new visitor got %d %q, waiter %d %q; want both let through", where, code, body, wcode, wbody)
					}
					continue
				}
				if code != http.StatusServiceUnavailable || !isUnavailable(body) ||
					wcode != http.StatusServiceUnavailable || !isUnavailable(wbody) {
					t.Fatalf("%s: new visitor got %d %q, waiter %d %q; want both 503 unavailable", where, code, body, wcode, wbody)
				}
				// A browser gets the page saying so.
				code, page, err := newGuest().get(nd.base, r.path, "text/html")
				if err != nil || code != http.StatusServiceUnavailable || !strings.Contains(page, "temporarily unavailable") {
					t.Fatalf("%s: browser got %d (%v), want the 503 unavailable page:\n%s", where, code, err, tail(page, 500))
				}
			}
		}
		f.requireUp()
	}
	srv.Restart()
	outage := time.Since(down)
	t.Logf("redis restarted (empty) after %v", outage.Round(time.Millisecond))

	rdb := newRedisClient(t, srv.Addr)
	ctx := context.Background()
	for _, r := range rooms {
		// New visitors are admitted up to capacity, then queued, on every instance.
		var admitted []*guest
		took := waitFor(t, "room "+r.fail+" queueing again", func() bool {
			g := newGuest()
			nd := f.nodes[len(admitted)%len(f.nodes)]
			q, ok, err := g.place(nd.base, r.path)
			switch {
			case err != nil: // closed: 503 until the instance's calls succeed again
				return false
			case ok && g.cookie(nd.base, r.name) != "": // admitted by the store (open passes without a cookie)
				admitted = append(admitted, g)
				return false
			case ok:
				return false
			}
			if q.Position != 1 {
				t.Fatalf("fail %s: first waiter after the restart told position %d", r.fail, q.Position)
			}
			return true
		})
		t.Logf("fail %s: queueing again %v after the restart", r.fail, took.Round(time.Millisecond))
		if len(admitted) != capacity {
			t.Fatalf("fail %s: %d admitted after the restart before the first waiter, capacity %d", r.fail, len(admitted), capacity)
		}
		if a, err := rdb.ZCard(ctx, roomKey(r.name, "active")).Result(); err != nil || a != capacity {
			t.Fatalf("fail %s: active is %d after the restart (%v)", r.fail, a, err)
		}

		// Admissions reach another instance's WebSocket again.
		w := newGuest()
		if q, ok, err := w.place(f.nodes[0].base, r.path); err != nil || ok || q.Position != 2 {
			t.Fatalf("fail %s: second waiter after the restart: admitted=%v %+v %v", r.fail, ok, q, err)
		}
		ws, err := w.socket(ctx, f.nodes[1].base, r.path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := readMessage(ctx, ws); err != nil {
			t.Fatal(err)
		}
		sent := time.Now()
		for _, g := range admitted {
			if _, body, err := g.get(f.nodes[2].base, r.path+"/done", ""); err != nil || body != "done" {
				t.Fatalf("fail %s: checkout: %q %v", r.fail, body, err)
			}
		}
		if err := awaitAdmitted(ctx, ws); err != nil {
			t.Fatalf("fail %s: waiter on node1 after checkouts on node2: %v", r.fail, err)
		}
		t.Logf("fail %s: \"admitted\" on another instance %v after the checkouts", r.fail, time.Since(sent).Round(time.Millisecond))
		ws.Close(websocket.StatusNormalClosure, "")
	}
	f.requireUp()

	// The outage was logged, and rate-limited: one line per room per instance per 10 s.
	limit := 2 * (1 + int(time.Since(down)/(10*time.Second)))
	for _, nd := range f.nodes {
		n := strings.Count(nd.log(), "waiting room store unavailable")
		t.Logf("%s logged the outage %d times", nd.name, n)
		if n == 0 || n > limit {
			t.Errorf("%s logged the outage %d times, want 1..%d", nd.name, n, limit)
		}
	}
}
