package caddytest

import (
	"strings"
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// TestMultiSecretAfterRedisRestart: instances given no secret agree on one through
// Redis. Redis without persistence forgets it on a restart; an instance that starts (or
// reloads) after that must still accept the cookies the running instances hand out,
// or every waiter it sees loses its place.
func TestMultiSecretAfterRedisRestart(t *testing.T) {
	srv := testredis.Start(t)
	room := uniqueRoom(t)
	rooms := func(int) string { return roomBlock(room, "/shop*", 1, "redis redis://"+srv.Addr) }
	f := startFleet(t, 2, rooms)

	srv.Restart()
	t.Log("redis restarted (empty)")
	holder, w := newGuest(), newGuest()
	waitFor(t, "node0 admitting again", func() bool {
		_, ok, err := holder.place(f.nodes[0].base, "/shop")
		return err == nil && ok && holder.cookie(f.nodes[0].base, room) != ""
	})
	if q, ok, err := w.place(f.nodes[0].base, "/shop"); err != nil || ok || q.Position != 1 {
		t.Fatalf("waiter on node0: admitted=%v %+v %v", ok, q, err)
	}

	// The running instances offer their secret again every tick, so Redis has it back
	// as soon as they reach it. (An instance that starts inside that window, before
	// any running instance has reached the restarted Redis, would plant its own: a
	// configured `secret` has no such window, which is why the README asks for one.)
	waitFor(t, "the fleet to give the restarted Redis its secret back", func() bool {
		out, err := srv.Do("EXISTS", "waiting_room:{"+room+"}:secret")
		return err == nil && strings.TrimSpace(out) == "1"
	})
	late := f.start(caddyBinary(t), 2, rooms(2))
	f.nodes = append(f.nodes, late)
	f.waitReady(late)
	for _, nd := range f.nodes {
		if q, ok, err := w.place(nd.base, "/shop"); err != nil || ok || q.Position != 1 {
			t.Errorf("waiter with node0's cookie asking %s: admitted=%v position %d (%v), want position 1\n%s",
				nd.name, ok, q.Position, err, tail(nd.log(), 3000))
		}
	}
	if _, ok, err := holder.place(late.base, "/shop"); err != nil || !ok {
		t.Errorf("visitor admitted on node0 stopped on the instance started after the restart (%v)", err)
	}
}
