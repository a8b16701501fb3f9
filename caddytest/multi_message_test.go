package caddytest

import (
	"context"
	"fmt"
	"testing"

	"github.com/coder/websocket"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// awaitMessage reads frames until a message frame and returns its text, for at most
// the liveness deadline in all (positions keep coming while it waits).
func awaitMessage(ctx context.Context, c *websocket.Conn) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, eventDeadline)
	defer cancel()
	for {
		m, err := readMessage(ctx, c)
		if err != nil {
			return "", fmt.Errorf("waiting for the message: %w", err)
		}
		switch m.Type {
		case "message":
			return m.Text, nil
		case "position":
			if m.Message != "" {
				return "", fmt.Errorf("a position push carries the message: %+v", m)
			}
		default:
			return "", fmt.Errorf("unexpected frame %+v", m)
		}
	}
}

// TestMultiMessageReachesEveryInstance: three caddy processes on one Redis. A message
// PATCHed on one instance reaches the WebSocket waiters and the JSON pollers of every
// instance; a socket opened after the change hears it on connect; clearing it reaches
// them all too.
func TestMultiMessageReachesEveryInstance(t *testing.T) {
	srv := testredis.Start(t)
	room := uniqueRoom(t)
	f := startFleet(t, 3, func(int) string { return roomBlock(room, "/shop*", 1, "redis redis://"+srv.Addr) })
	ctx := context.Background()

	if _, ok, err := newGuest().place(f.nodes[0].base, "/shop"); err != nil || !ok {
		t.Fatalf("the first visitor was not admitted: %v", err)
	}
	type waiter struct {
		nd     *node
		socket *websocket.Conn
		poller *guest
	}
	var waiters []waiter
	for _, nd := range f.nodes {
		g, p := newGuest(), newGuest()
		for _, x := range []*guest{g, p} {
			if _, ok, err := x.place(nd.base, "/shop"); err != nil || ok {
				t.Fatalf("a waiter on %s: admitted %v, %v", nd.name, ok, err)
			}
		}
		c, err := g.socket(ctx, nd.base, "/shop")
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		if m, err := readMessage(ctx, c); err != nil || m.Type != "position" || m.Message != "" {
			t.Fatalf("the first frame on %s: %+v %v", nd.name, m, err)
		}
		waiters = append(waiters, waiter{nd, c, p})
	}

	const text = "Tickets for Saturday are sold out. <b>Friday</b> & Sunday remain."
	patchFleetRoom(t, f.nodes[1], room, fmt.Sprintf(`{"message": %q}`, text))
	for _, w := range waiters {
		if got, err := awaitMessage(ctx, w.socket); err != nil || got != text {
			t.Fatalf("the socket on %s was told %q (%v), want %q", w.nd.name, got, err, text)
		}
		polls := 0
		waitFor(t, "the poller on "+w.nd.name+" to be told the message", func() bool {
			polls++
			q, ok, err := w.poller.place(w.nd.base, "/shop")
			if err != nil || ok {
				t.Fatalf("poll %d on %s: admitted %v, %v", polls, w.nd.name, ok, err)
			}
			return q.Message == text
		})
	}

	// A socket that (re)connects after the change hears the message at once.
	late := newGuest()
	if _, ok, err := late.place(f.nodes[2].base, "/shop"); err != nil || ok {
		t.Fatalf("a late waiter: admitted %v, %v", ok, err)
	}
	c, err := late.socket(ctx, f.nodes[2].base, "/shop")
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if got, err := awaitMessage(ctx, c); err != nil || got != text {
		t.Fatalf("a socket opened after the change was told %q (%v)", got, err)
	}

	patchFleetRoom(t, f.nodes[0], room, `{"message": null}`)
	for _, w := range append(waiters, waiter{f.nodes[2], c, late}) {
		if got, err := awaitMessage(ctx, w.socket); err != nil || got != "" {
			t.Fatalf("after the message was cleared, the socket on %s was told %q (%v)", w.nd.name, got, err)
		}
		waitFor(t, "the poller on "+w.nd.name+" to lose the message", func() bool {
			q, _, err := w.poller.place(w.nd.base, "/shop")
			return err == nil && q.Message == ""
		})
	}
}
