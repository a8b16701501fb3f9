package caddytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// Phases of a Redis restart, as the shoppers of TestMultiRedisRestartUnderChurn see it.
const (
	redisUp int32 = iota
	redisDown
	redisBack // restarted, empty, until every instance has answered a visitor again
)

// TestMultiRedisRestartUnderChurn stops the fleet's Redis in the middle of a sale and
// starts it again empty (nothing is saved), while shoppers keep arriving on every
// instance, wait on the waiting socket of another instance, go in and check out. The
// room fails closed. Whatever the moment of the fault:
//   - capacity is never exceeded, in the store's active set (sampled from Redis) nor in
//     the number of shoppers inside at once;
//   - a shopper inside keeps passing on the cookie while Redis is down;
//   - a new visitor is told "temporarily unavailable" (503) only while Redis is down or
//     coming back, never once every instance has answered again;
//   - a waiter is told a worse place never, and loses the place (4001) only if it
//     joined before the restart, whose empty Redis knows nobody;
//   - after the restart, waiters are admitted from the line again on every instance's
//     sockets, so no instance keeps believing in a store state that is gone.
func TestMultiRedisRestartUnderChurn(t *testing.T) {
	srv := testredis.Start(t)
	room := uniqueRoom(t)
	const capacity, shoppersPerNode = 3, 3
	store := "redis redis://" + srv.Addr + " {\n\t\t\ttimeout 250ms\n\t\t\tdial_timeout 250ms\n\t\t}"
	f := startFleet(t, 3, func(int) string {
		return roomBlock(room, "/shop*", capacity, store, "fail closed", "session_ttl 10s")
	})
	rdb := newRedisClient(t, srv.Addr)

	var phase atomic.Int32 // redisUp, redisDown or redisBack
	var restarts atomic.Int32
	var failures failureLog
	var c restartCount
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i := range len(f.nodes) * shoppersPerNode {
		arrive, wait := f.nodes[i%len(f.nodes)], f.nodes[(i+1)%len(f.nodes)]
		wg.Go(func() {
			for ctx.Err() == nil {
				if err := c.shop(ctx, arrive, wait, &phase, &restarts); err != nil && ctx.Err() == nil {
					failures.add("shopper %d: %v", i, err)
					return
				}
			}
		})
	}
	var samples, maxActive atomic.Int64
	wg.Go(func() {
		for ctx.Err() == nil {
			n, err := rdb.ZCard(ctx, roomKey(room, "active")).Result()
			switch {
			case ctx.Err() != nil:
				return
			case err != nil && phase.Load() == redisUp:
				failures.add("active sampler with Redis up: %v", err)
				return
			case err == nil:
				if phase.Load() == redisUp {
					samples.Add(1)
				}
				if n > maxActive.Load() {
					maxActive.Store(n)
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	until := func(what string, cond func() bool) {
		waitFor(t, what, func() bool {
			if failures.count() > 0 {
				failures.report(t)
			}
			return cond()
		})
	}

	until("the sale to admit from the line", func() bool { return c.fromLine.Load() >= 5 })
	before := c.fromLine.Load()
	phase.Store(redisDown)
	srv.Stop()
	down := c.unavailable.Load()
	time.Sleep(2 * time.Second) // long enough for each instance to find out
	until("a visitor told the room is unavailable", func() bool { return c.unavailable.Load() > down })
	restarts.Add(1)
	srv.Restart()
	phase.Store(redisBack)
	answered := make([]atomic.Bool, len(f.nodes))
	for i, nd := range f.nodes {
		until(nd.name+" to answer a new visitor after the restart", func() bool {
			code, _, err := newGuest().get(nd.base, "/shop", "application/json")
			answered[i].Store(err == nil && code != http.StatusServiceUnavailable)
			return answered[i].Load()
		})
	}
	phase.Store(redisUp)
	back := c.fromLine.Load()
	until("waiters admitted from the line after the restart", func() bool { return c.fromLine.Load() >= back+10 })
	cancel()
	wg.Wait()
	failures.report(t)
	t.Logf("%d shoppers went in (%d from the line before the fault, %d after the restart), %d told unavailable, %d waiters lost their place at the restart; %d samples of the active set with Redis up, at most %d active, at most %d inside at once",
		c.inside.admitted.Load(), before, c.fromLine.Load()-back, c.unavailable.Load(), c.lost.Load(), samples.Load(), maxActive.Load(), c.inside.maxInside.Load())
	switch {
	case samples.Load() < 20:
		t.Fatalf("only %d samples of the active set", samples.Load())
	case maxActive.Load() > capacity:
		t.Fatalf("active reached %d with capacity %d", maxActive.Load(), capacity)
	case c.inside.maxInside.Load() > capacity:
		t.Fatalf("%d shoppers were inside at once with capacity %d", c.inside.maxInside.Load(), capacity)
	}
	f.requireUp()
}

// restartCount is what the shoppers of TestMultiRedisRestartUnderChurn saw.
type restartCount struct {
	inside                      churnCount
	fromLine, unavailable, lost atomic.Int64
}

// shop is one visit: arrive on one instance, and when queued, wait on another's
// socket until admitted; then go in, stay a moment and check out.
func (c *restartCount) shop(ctx context.Context, arrive, wait *node, phase, restarts *atomic.Int32) error {
	g := newGuest()
	code, body, err := g.get(arrive.base, "/shop", "application/json")
	if err != nil {
		return err
	}
	if code == http.StatusServiceUnavailable && isUnavailable(body) {
		if phase.Load() == redisUp {
			return fmt.Errorf("%s told a new visitor unavailable with Redis up", arrive.name)
		}
		c.unavailable.Add(1)
		time.Sleep(20 * time.Millisecond)
		return nil
	}
	if !strings.HasPrefix(body, "upstream ") {
		var q queueAnswer
		if err := json.Unmarshal([]byte(body), &q); err != nil || q.Status != "queued" {
			return fmt.Errorf("%s: not a queued answer: %d %q", arrive.name, code, body)
		}
		joinedIn, waitedIn := restarts.Load(), phase.Load()
		admitted, err := awaitTurn(ctx, g, wait, q.Position)
		var refused refusedUpgrade
		switch {
		case errors.As(err, &refused) && refused == http.StatusServiceUnavailable &&
			(waitedIn != redisUp || phase.Load() != redisUp):
			// Queued just before Redis went: the socket's upgrade asks the store too.
			c.unavailable.Add(1)
			return nil
		case err != nil:
			return err
		case !admitted && joinedIn == restarts.Load():
			return fmt.Errorf("a waiter who joined on %s after the last restart lost its place on %s", arrive.name, wait.name)
		case !admitted:
			c.lost.Add(1)
			return nil
		}
		code, body, err := g.get(wait.base, "/shop", "application/json")
		switch {
		case err != nil:
			return err
		case code == http.StatusServiceUnavailable && isUnavailable(body) && phase.Load() != redisUp:
			// Told admitted just before Redis went: the cookie still says queued, and
			// nothing can confirm the turn until Redis is back, when it is gone.
			c.lost.Add(1)
			return nil
		case !strings.HasPrefix(body, "upstream "):
			return fmt.Errorf("told admitted on %s, then not let in: %d %q", wait.name, code, body)
		}
		c.fromLine.Add(1)
	}
	c.inside.admitted.Add(1)
	c.inside.enter()
	time.Sleep(30 * time.Millisecond)
	// Inside, the cookie is enough, Redis or not.
	_, ok, err := g.place(arrive.base, "/shop/page")
	c.inside.inside.Add(-1) // before the checkout frees the slot
	if err != nil || !ok {
		return fmt.Errorf("a shopper inside was stopped on %s (Redis phase %d): %v", arrive.name, phase.Load(), err)
	}
	if _, body, err := g.get(arrive.base, "/shop/done", ""); err != nil || body != "done" {
		return fmt.Errorf("checkout on %s: %q %v", arrive.name, body, err)
	}
	return nil
}

// awaitTurn holds the waiting socket on nd until the waiter is admitted (true) or its
// place is lost (false), never told a worse place than position.
func awaitTurn(ctx context.Context, g *guest, nd *node, position int) (bool, error) {
	ws, err := g.socket(ctx, nd.base, "/shop")
	if err != nil {
		return false, err
	}
	defer ws.CloseNow()
	for {
		m, err := readMessage(ctx, ws)
		var ce websocket.CloseError
		switch {
		case errors.As(err, &ce) && ce.Code == 4001:
			return false, nil
		case err != nil:
			return false, fmt.Errorf("reading the socket on %s: %w", nd.name, err)
		case m.Type == "admitted":
			return true, nil
		case m.Type != "position" || m.Position < 1 || m.Position > position:
			return false, fmt.Errorf("told %+v on %s, had position %d", m, nd.name, position)
		}
		position = m.Position
	}
}
