package caddytest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// TestMultiAdmittedOnAnotherInstance: a waiter whose WebSocket is on instance B is told
// "admitted" when the visitor holding the only slot checks out on instance A (the
// upstream's revoke), round after round, each round on other instances.
func TestMultiAdmittedOnAnotherInstance(t *testing.T) {
	srv := testredis.Start(t)
	room := uniqueRoom(t)
	f := startFleet(t, 3, func(int) string {
		return roomBlock(room, "/shop*", 1, "redis redis://"+srv.Addr)
	})
	runAdmittedAcross(t, f, "/shop")
	f.requireUp()
}

func runAdmittedAcross(t *testing.T, f *fleet, path string) {
	t.Helper()
	ctx := context.Background()
	n := len(f.nodes)
	holder := newGuest()
	if _, ok, err := holder.place(f.nodes[0].base, path); err != nil || !ok {
		t.Fatalf("first visitor not admitted: %v", err)
	}
	var latencies []time.Duration
	for k := range 6 {
		a, b, c := f.nodes[k%n], f.nodes[(k+1)%n], f.nodes[(k+2)%n]
		w := newGuest()
		q, ok, err := w.place(a.base, path)
		if err != nil || ok || q.Position != 1 {
			t.Fatalf("round %d: waiter joining on %s: admitted=%v %+v %v", k, a.name, ok, q, err)
		}
		ws, err := w.socket(ctx, b.base, path)
		if err != nil {
			t.Fatal(err)
		}
		if m, err := readMessage(ctx, ws); err != nil || m.Type != "position" || m.Position != 1 {
			t.Fatalf("round %d: first message on %s: %+v %v", k, b.name, m, err)
		}
		sent := time.Now()
		if _, body, err := holder.get(a.base, path+"/done", ""); err != nil || body != "done" {
			t.Fatalf("round %d: checkout on %s: %q %v", k, a.name, body, err)
		}
		if err := awaitAdmitted(ctx, ws); err != nil {
			t.Fatalf("round %d: waiter on %s after checkout on %s: %v", k, b.name, a.name, err)
		}
		latencies = append(latencies, time.Since(sent))
		ws.Close(websocket.StatusNormalClosure, "")
		// Told admitted on B, let in on C.
		if _, ok, err := w.place(c.base, path); err != nil || !ok {
			t.Fatalf("round %d: told admitted on %s, stopped on %s: %v", k, b.name, c.name, err)
		}
		holder = w
	}
	t.Logf("checkout on one instance to \"admitted\" on another's WebSocket: %v", latencies)
	slices.Sort(latencies)
	t.Logf("median %v, max %v (the admission step runs every 250 ms, the hub reconciles every 500 ms)",
		latencies[len(latencies)/2].Round(time.Millisecond), latencies[len(latencies)-1].Round(time.Millisecond))
}

// TestMultiWaiterMovesBetweenInstances: a load balancer may send a waiter's every
// request to another instance. With no secret configured the instances agree on one
// through Redis, so each accepts the others' cookies, and the waiter keeps its place
// wherever it asks, over JSON and over its WebSocket, as the queue moves.
func TestMultiWaiterMovesBetweenInstances(t *testing.T) {
	srv := testredis.Start(t)
	room := uniqueRoom(t)
	f := startFleet(t, 3, func(int) string {
		return roomBlock(room, "/shop*", 1, "redis redis://"+srv.Addr)
	})
	runMove(t, f, newRedisClient(t, srv.Addr), room, "/shop")
	f.requireUp()
}

func runMove(t *testing.T, f *fleet, rdb redis.UniversalClient, room, path string) {
	t.Helper()
	ctx := context.Background()
	n := len(f.nodes)
	holder := newGuest()
	if _, ok, err := holder.place(f.nodes[0].base, path); err != nil || !ok {
		t.Fatalf("first visitor not admitted: %v", err)
	}
	if got, err := rdb.Exists(ctx, roomKey(room, "secret")).Result(); err != nil || got != 1 {
		t.Fatalf("no shared secret in Redis (%d, %v)", got, err)
	}
	waiters := make([]*guest, 5)
	for i := range waiters {
		waiters[i] = newGuest()
		home := f.nodes[i%n]
		q, ok, err := waiters[i].place(home.base, path)
		if err != nil || ok || q.Position != i+1 {
			t.Fatalf("waiter %d joining on %s: admitted=%v %+v %v", i, home.name, ok, q, err)
		}
	}
	// Every waiter asks every instance, in a different order each time: same place.
	checkPlaces := func(when string, first int) {
		t.Helper()
		for i := first; i < len(waiters); i++ {
			for k := range n {
				nd := f.nodes[(i+k+1)%n]
				q, ok, err := waiters[i].place(nd.base, path)
				if err != nil || ok || q.Position != i+1-first {
					t.Fatalf("%s: waiter %d (joined on node%d) asking %s: admitted=%v position %d, want %d (%v)",
						when, i, i%n, nd.name, ok, q.Position, i+1-first, err)
				}
			}
		}
	}
	checkPlaces("before anyone left", 0)

	// Waiter 2 joined on node2; its WebSocket goes to node0, told the same place.
	ws, err := waiters[2].socket(ctx, f.nodes[0].base, path)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if m, err := readMessage(ctx, ws); err != nil || m.Position != 3 {
		t.Fatalf("waiter 2's WebSocket on node0: %+v %v", m, err)
	}

	// The holder checks out on node1; waiter 0 (cookie from node0) gets in on node2.
	if _, body, err := holder.get(f.nodes[1].base, path+"/done", ""); err != nil || body != "done" {
		t.Fatalf("checkout: %q %v", body, err)
	}
	waitFor(t, "waiter 0 admitted", func() bool {
		_, ok, err := waiters[0].place(f.nodes[2].base, path)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	})
	// Admitted on node2 with a cookie from node0, it passes everywhere, holding one slot.
	for _, nd := range f.nodes {
		if _, ok, err := waiters[0].place(nd.base, path); err != nil || !ok {
			t.Fatalf("admitted waiter 0 stopped on %s: %v", nd.name, err)
		}
	}
	if a, err := rdb.ZCard(ctx, roomKey(room, "active")).Result(); err != nil || a != 1 {
		t.Fatalf("active is %d after one admission (%v)", a, err)
	}
	if m, err := readMessage(ctx, ws); err != nil || m.Position != 2 {
		t.Fatalf("waiter 2's WebSocket after the head got in: %+v %v", m, err)
	}
	checkPlaces("after the head got in", 1)
}
