package caddytest

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// TestMultiRedisAOFRestart: two caddy processes on one Redis persisting as a sale needs
// (appendonly yes, appendfsync everysec). In the middle of a sale, with the room full
// and a line behind it, Redis is shut down gracefully (SIGTERM, as an operator or an
// orchestrator stops it); while it is down a newcomer is told the room is unavailable
// (fail closed); it is started again on the same files and port. Once the fleet
// answers again: every waiter is at exactly the place it had (a pass holder still
// ahead of the line), everyone inside is still in (and still counted in the store's
// active set), a new arrival goes to the end, and each slot freed after the restart
// goes to the head of the line; the active set never holds more than capacity.
func TestMultiRedisAOFRestart(t *testing.T) {
	srv := testredis.StartAOF(t)
	room := uniqueRoom(t)
	const capacity = 2
	store := "redis redis://" + srv.Addr + " {\n\t\t\ttimeout 250ms\n\t\t\tdial_timeout 250ms\n\t\t}"
	f := startFleet(t, 2, func(int) string {
		return roomBlock(room, "/shop*", capacity, store, "fail closed",
			"secret "+saleSecret, "queue_ttl 2m", "away_ttl 10m", "session_ttl 1h")
	})
	s := newSale(t, f, room, capacity, newRedisClient(t, srv.Addr))
	s.join("h1", s.next(), "")
	s.join("h2", s.next(), "")
	for i := 1; i <= 5; i++ {
		s.join(fmt.Sprintf("w%d", i), s.next(), "")
	}
	s.checkout(0) // h1: w1 in
	pass := mintFleetPasses(t, f.nodes[0], room, 1, 1)[0]
	s.join("p1", s.next(), pass) // ahead of the line, in the pass lane
	s.check("before the Redis restart")

	s.redisDown.Store(true)
	srv.Shutdown()
	waitFor(t, "a newcomer to be told the room is unavailable while Redis is down", func() bool {
		code, body, err := newGuest().get(f.nodes[0].base, "/shop", "application/json")
		return err == nil && code == http.StatusServiceUnavailable && isUnavailable(body)
	})
	srv.RestartGraceful() // on the same port and files
	head := s.line[0]
	for _, nd := range f.nodes {
		waitFor(t, nd.name+" to answer the head of the line after the Redis restart", func() bool {
			q, in, err := head.g.place(nd.base, "/shop")
			if in || err == nil && q.Position != 1 {
				t.Fatalf("%s, at the head, on %s after the Redis restart: admitted=%v %+v", head.name, nd.name, in, q)
			}
			return err == nil
		})
	}
	s.redisDown.Store(false)
	s.check("after the Redis restart")
	s.join("w6", s.next(), "")
	s.check("a newcomer after the Redis restart")
	for len(s.line) > 0 {
		s.checkout(0)
		s.check(fmt.Sprintf("after %d let in", len(s.order)))
	}
	want := []string{"h1", "h2", "w1", "p1", "w2", "w3", "w4", "w5", "w6"}
	if fmt.Sprint(s.order) != fmt.Sprint(want) {
		t.Fatalf("let in in the order %v, want %v", s.order, want)
	}
	t.Logf("%d let in, in arrival order, across a graceful Redis restart on its AOF; %d samples of the active set, at most %d active of %d",
		len(s.order), s.samples.Load(), s.maxActive.Load(), capacity)
	f.requireUp()
}
