package caddytest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// TestMultiAwayAndBack: on three caddy processes sharing one Redis, a waiter who goes
// quiet on one instance for longer than queue_ttl is away (counted nowhere, the
// waiters behind move up) and comes back on another instance to the same place; when
// the line passes it while away, it comes back first and is the next one in.
func TestMultiAwayAndBack(t *testing.T) {
	srv := testredis.Start(t)
	room := uniqueRoom(t)
	f := startFleet(t, 3, func(int) string {
		return roomBlock(room, "/shop*", 1, "redis redis://"+srv.Addr,
			"queue_ttl 5s", "away_ttl 1m", "session_ttl 1h")
	})
	a, b, c := f.nodes[0], f.nodes[1], f.nodes[2]
	holder, quiet, second, third := newGuest(), newGuest(), newGuest(), newGuest()
	mustPlace := func(g *guest, base string) queueAnswer {
		t.Helper()
		q, admitted, err := g.place(base, "/shop")
		if err != nil || admitted {
			t.Fatalf("%s/shop: admitted=%v %+v %v, want queued", base, admitted, q, err)
		}
		return q
	}
	if _, ok, err := holder.place(a.base, "/shop"); err != nil || !ok {
		t.Fatalf("the first visitor was not admitted: %v", err)
	}
	mustPlace(quiet, a.base)
	mustPlace(quiet, a.base) // its page answers once, as a real browser's does, then nothing
	mustPlace(second, b.base)
	if q := mustPlace(third, c.base); q.Position != 3 || q.AwayTTLSeconds != 60 {
		t.Fatalf("the third waiter: %+v, want position 3 and away_ttl_seconds 60", q)
	}

	// quiet says nothing; the others keep polling until quiet is away on every count.
	waitFor(t, "the quiet waiter to be away", func() bool {
		mustPlace(third, c.base)
		q := mustPlace(second, b.base)
		obj := fleetRoom(t, a, room)
		return q.Position == 1 && obj.Waiting == 2 && obj.Away == 1
	})
	if q := mustPlace(third, c.base); q.Position != 2 || q.Waiting != 2 {
		t.Fatalf("the third waiter while one ahead is away: %+v, want position 2 of 2", q)
	}
	back := mustPlace(quiet, c.base) // away on A, back on C
	if back.Position != 1 || !back.Returned {
		t.Fatalf("the quiet waiter back on another instance: %+v, want position 1, returned", back)
	}
	if q := mustPlace(second, b.base); q.Position != 2 {
		t.Fatalf("the second waiter once the first is back: %+v, want position 2", q)
	}

	// quiet goes quiet again, and the line passes it: the holder checks out, second is
	// let in.
	waitFor(t, "the quiet waiter to be away again", func() bool {
		mustPlace(second, b.base)
		mustPlace(third, c.base)
		return fleetRoom(t, b, room).Away == 1
	})
	if _, body, err := holder.get(a.base, "/shop/done", ""); err != nil || body != "done" {
		t.Fatalf("checkout: %q %v", body, err)
	}
	waitFor(t, "the second waiter to be let in past the away one", func() bool {
		mustPlace(third, c.base)
		_, ok, err := second.place(b.base, "/shop")
		return err == nil && ok
	})
	// Back after its turn: first, ahead of third, and the next one in.
	if q := mustPlace(quiet, b.base); q.Position != 1 || !q.Returned {
		t.Fatalf("the quiet waiter back after its turn passed: %+v, want position 1, returned", q)
	}
	if q := mustPlace(third, c.base); q.Position != 2 {
		t.Fatalf("the third waiter behind a returner: %+v, want position 2", q)
	}
	if _, body, err := second.get(b.base, "/shop/done", ""); err != nil || body != "done" {
		t.Fatalf("checkout: %q %v", body, err)
	}
	waitFor(t, "the returner to be let in", func() bool {
		mustPlace(third, c.base)
		_, ok, err := quiet.place(a.base, "/shop")
		return err == nil && ok
	})
	if q := mustPlace(third, c.base); q.Position != 1 {
		t.Fatalf("the third waiter at the end: %+v, want position 1", q)
	}
	f.requireUp()
}

// fleetRoom reads the room object from nd's admin API.
func fleetRoom(t *testing.T, nd *node, room string) roomObject {
	t.Helper()
	resp, err := http.Get(nd.admin + "/waiting_room/" + room)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var obj roomObject
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &obj) != nil {
		t.Fatal(fmt.Errorf("GET room on %s: %d %s", nd.name, resp.StatusCode, body))
	}
	return obj
}

// TestMultiHeldSocketsKeepPlaces: waiters who only hold their WebSocket, on three caddy
// processes sharing one Redis, stay present for many times queue_ttl although no
// instance hears of any of them one by one (each holds its waiters and renews one
// lease). When one instance is killed, its waiters are away after queue_ttl; the
// others stay.
func TestMultiHeldSocketsKeepPlaces(t *testing.T) {
	t.Parallel() // its own fleet and Redis, and most of its time waiting on the clock: beside the others like it
	srv := testredis.Start(t)
	room := uniqueRoom(t)
	f := startFleet(t, 3, func(int) string {
		return roomBlock(room, "/shop*", 1, "redis redis://"+srv.Addr,
			"queue_ttl 5s", "away_ttl 1m", "session_ttl 1h")
	})
	ctx := context.Background()
	holder := newGuest()
	if _, ok, err := holder.place(f.nodes[0].base, "/shop"); err != nil || !ok {
		t.Fatalf("the first visitor was not admitted: %v", err)
	}
	const perNode = 5
	var sockets []*websocket.Conn
	for i := range 3 * perNode {
		nd := f.nodes[i%3]
		g := newGuest()
		if q, ok, err := g.place(nd.base, "/shop"); err != nil || ok || q.Position != i+1 {
			t.Fatalf("waiter %d on %s: admitted=%v %+v %v", i, nd.name, ok, q, err)
		}
		ws, err := g.socket(ctx, nd.base, "/shop")
		if err != nil {
			t.Fatal(err)
		}
		defer ws.CloseNow()
		sockets = append(sockets, ws)
		go drain(ws)
	}
	// Four times queue_ttl with nothing but the sockets: nobody goes away.
	const stretch = 12 * time.Second
	for start := time.Now(); time.Since(start) < stretch; time.Sleep(500 * time.Millisecond) {
		if obj := fleetRoom(t, f.nodes[1], room); obj.Away != 0 || obj.Waiting != 3*perNode {
			t.Fatalf("%v into holding the sockets only: %d waiting, %d away; want %d waiting, none away",
				time.Since(start).Round(time.Second), obj.Waiting, obj.Away, 3*perNode)
		}
	}
	// Kill the third instance: its waiters are away once its lease is older than queue_ttl.
	victim := f.nodes[2]
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the killed instance's waiters to be away", func() bool {
		obj := fleetRoom(t, f.nodes[0], room)
		return obj.Away == perNode && obj.Waiting == 2*perNode
	})
}

// drain reads a socket until it ends, so the server's pushes never back up.
func drain(c *websocket.Conn) {
	for {
		if _, _, err := c.Read(context.Background()); err != nil {
			return
		}
	}
}
