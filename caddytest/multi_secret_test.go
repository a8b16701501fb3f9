package caddytest

import (
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

	late := f.start(caddyBinary(t), 2, rooms(2))
	f.nodes = append(f.nodes, late)
	f.waitReady(late)
	for _, nd := range f.nodes {
		if q, ok, err := w.place(nd.base, "/shop"); err != nil || ok || q.Position != 1 {
			t.Errorf("waiter with node0's cookie asking %s: admitted=%v position %d (%v), want position 1",
				nd.name, ok, q.Position, err)
		}
	}
	if _, ok, err := holder.place(late.base, "/shop"); err != nil || !ok {
		t.Errorf("visitor admitted on node0 stopped on the instance started after the restart (%v)", err)
	}
}
