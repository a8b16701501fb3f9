package caddytest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// TestNoShowBotsCannotHoldTheLine: bot places that join with one request and then only
// ever reopen the waiting socket with their cookie never arrive, whether they keep the
// admitted cookie a socket told of its admission is given or not. Each is let in and
// misses its turn (arrive_ttl); it keeps the turn, but a socket alone is not coming
// back, so it is never let in again. A real waiter behind them (polling as a page
// without a socket does) is let in after one no-show per bot place, and is the
// visitor the shop sees: capacity 1 with two bot places, capacity 3 with six, with
// session_max, and on Redis. The rooms share one caddy process and run side by side.
// The bound is a count of no-shows; the deadline only guards a hang.
func TestNoShowBotsCannotHoldTheLine(t *testing.T) {
	type sale struct {
		name           string
		capacity, bots int
		store, extra   string
		keep           bool // the bots keep the cookies their sockets are given
		room, path     string
	}
	srv := testredis.Start(t)
	sales := []*sale{
		{name: "capacity 1, 2 bots", capacity: 1, bots: 2, store: "memory"},
		{name: "capacity 3, 6 bots", capacity: 3, bots: 6, store: "memory"},
		{name: "capacity 1, 2 bots, session_max", capacity: 1, bots: 2, store: "memory", extra: "session_max 15s"},
		{name: "redis, capacity 3, 6 bots", capacity: 3, bots: 6, store: "redis redis://" + srv.Addr},
		{name: "capacity 1, 2 bots keeping their sockets' cookies", capacity: 1, bots: 2, store: "memory", keep: true},
	}
	blocks := ""
	for _, s := range sales {
		s.room = uniqueRoom(t)
		s.path = "/" + s.room
		blocks += roomBlock(s.room, s.path+"*", s.capacity, s.store,
			"queue_ttl 5s", "away_ttl 1m", "session_ttl 1h", "arrive_ttl 5s", s.extra)
	}
	f := startFleet(t, 1, func(int) string { return blocks })
	nd := f.nodes[0]
	t.Cleanup(f.requireUp)

	for _, s := range sales {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			holders := make([]*guest, s.capacity)
			for i := range holders {
				holders[i] = newGuest()
				if _, ok, err := holders[i].place(nd.base, s.path); err != nil || !ok {
					t.Fatalf("visitor %d of the full room was not admitted: %v", i+1, err)
				}
			}
			bots := make([]*guest, s.bots)
			for i := range bots {
				bots[i] = newGuest()
				if _, in, err := bots[i].place(nd.base, s.path); err != nil || in {
					t.Fatalf("bot %d: admitted %v, %v; want queued", i+1, in, err)
				}
			}
			waiter := newGuest()
			q, in, err := waiter.place(nd.base, s.path)
			if err != nil || in || q.Position != s.bots+1 {
				t.Fatalf("the real waiter: %+v admitted %v, %v; want queued at %d", q, in, err, s.bots+1)
			}

			// The bots: a socket with the cookie of their one request, reopened whenever
			// it closes (it is told "admitted" and closed), never a page request.
			ctx, cancel := context.WithCancel(t.Context())
			var wg sync.WaitGroup
			for _, b := range bots {
				wg.Go(func() {
					for ctx.Err() == nil {
						open := b.socket
						if s.keep {
							open = b.keepingSocket
						}
						if c, err := open(ctx, nd.base, s.path); err == nil {
							for {
								if _, err := readMessage(ctx, c); err != nil {
									break
								}
							}
							c.CloseNow()
						}
						select {
						case <-ctx.Done():
						case <-time.After(250 * time.Millisecond):
						}
					}
				})
			}
			defer wg.Wait()
			defer cancel()

			for _, h := range holders {
				if _, body, err := h.get(nd.base, s.path+"/done", ""); err != nil || body != "done" {
					t.Fatalf("checkout: %q %v", body, err)
				}
			}
			// The waiter polls until the shop answers it; more no-shows than one per bot
			// place before that fail the test, and so would a hang.
			bound := s.bots
			hang := time.Now().Add(3 * time.Minute)
			for {
				q, in, err := waiter.place(nd.base, s.path)
				if err != nil {
					t.Fatalf("the real waiter's poll: %v", err)
				}
				if in {
					break
				}
				if n := noShowsOf(t, nd, s.room); n > bound {
					t.Fatalf("the real waiter is still queued (position %d of %d) after %d no-shows of %d bot places, want in after at most %d",
						q.Position, q.Waiting, n, s.bots, bound)
				}
				if time.Now().After(hang) {
					t.Fatalf("the real waiter is still queued (position %d of %d, %d no-shows) at the hang guard",
						q.Position, q.Waiting, noShowsOf(t, nd, s.room))
				}
				time.Sleep(500 * time.Millisecond)
			}
			n := noShowsOf(t, nd, s.room)
			if n > bound {
				t.Fatalf("the real waiter was let in after %d no-shows, want at most %d", n, bound)
			}
			if n < s.bots {
				t.Fatalf("%d no-shows of %d bot places: the bots were not let in first", n, s.bots)
			}
			t.Logf("the real waiter was let in after %d no-shows of %d bot places", n, s.bots)
			// And it stays in: its next request is the shop's too.
			if _, in, err := waiter.place(nd.base, s.path); err != nil || !in {
				t.Fatalf("the real waiter's next request: admitted %v, %v", in, err)
			}
		})
	}
}

// keepingSocket opens the waiting socket as socket does, and keeps the cookies the
// upgrade's answer sets, as a client with a cookie jar on its WebSocket would.
func (g *guest) keepingSocket(ctx context.Context, base, path string) (*websocket.Conn, error) {
	c, resp, u, err := g.dialSocket(ctx, base, path)
	if resp != nil {
		g.client.Jar.SetCookies(u, resp.Cookies())
	}
	if err != nil {
		return nil, fmt.Errorf("websocket to %s: %v", u, err)
	}
	return c, nil
}
