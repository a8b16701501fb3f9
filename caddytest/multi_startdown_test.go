package caddytest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// TestMultiStartWithRedisDown: two instances start (`caddy run`) while their Redis is
// not there yet, so they have no shared secret. Visitors get what fail says (passed
// under fail open, the 503 page under fail closed). When Redis appears the rooms work,
// with one secret: a cookie one instance signs is good on the other, and Redis holds
// exactly one secret per room.
func TestMultiStartWithRedisDown(t *testing.T) {
	srv := testredis.Reserve(t) // not started
	open, closed := uniqueRoom(t), uniqueRoom(t)
	store := "redis redis://" + srv.Addr + " {\n\t\t\ttimeout 250ms\n\t\t\tdial_timeout 250ms\n\t\t}"
	f := startFleet(t, 2, func(int) string {
		return roomBlock(open, "/open*", 1, store, "fail open") + roomBlock(closed, "/closed*", 1, store, "fail closed")
	})
	rooms := []struct{ name, path, fail string }{{open, "/open", "open"}, {closed, "/closed", "closed"}}
	samples := 0
	for _, nd := range f.nodes {
		for _, r := range rooms {
			for range 3 {
				code, body, err := newGuest().get(nd.base, r.path, "application/json")
				where := fmt.Sprintf("%s, fail %s, redis not there", nd.name, r.fail)
				switch {
				case err != nil:
					t.Fatalf("%s: %v", where, err)
				case r.fail == "open" && (code != http.StatusOK || !strings.HasPrefix(body, "upstream ")):
					t.Fatalf("%s: got %d %q, want let through", where, code, body)
				case r.fail == "closed" && (code != http.StatusServiceUnavailable || !isUnavailable(body)):
					t.Fatalf("%s: got %d %q, want 503 unavailable", where, code, body)
				}
				samples++
			}
		}
	}
	t.Logf("%d requests answered as fail says before Redis was there", samples)

	srv.Restart() // Redis appears, empty
	rdb := newRedisClient(t, srv.Addr)
	for _, r := range rooms {
		// A visitor admitted (with a cookie) on node0 passes on node1, and the next one
		// is queued on node1: one queue, one secret.
		var g *guest
		took := waitFor(t, "room "+r.fail+" admitting with a cookie", func() bool {
			g = newGuest()
			_, ok, err := g.place(f.nodes[0].base, r.path)
			return err == nil && ok && g.cookie(f.nodes[0].base, r.name) != ""
		})
		t.Logf("fail %s: admitting with a cookie %v after Redis appeared", r.fail, took)
		// Until node1 has the secret it answers as fail says, and that answer leaves
		// nothing in the store (a visitor passed under fail open gets no cookie): so the
		// next visitor asks until node1 decides with the store, and is then queued at 1.
		var q queueAnswer
		var ok bool
		waitFor(t, "node1 deciding with the store", func() bool {
			next := newGuest()
			var err error
			q, ok, err = next.place(f.nodes[1].base, r.path)
			return err == nil && (!ok || next.cookie(f.nodes[1].base, r.name) != "")
		})
		if ok || q.Position != 1 {
			t.Fatalf("fail %s: next visitor on node1: admitted=%v %+v; want queued at 1", r.fail, ok, q)
		}
		if _, ok, err := g.place(f.nodes[1].base, r.path+"/page"); err != nil || !ok {
			t.Fatalf("fail %s: node1 refused node0's cookie: %v", r.fail, err)
		}
		keys, err := rdb.Keys(context.Background(), roomKey(r.name, "secret*")).Result()
		if err != nil || len(keys) != 1 {
			t.Fatalf("fail %s: secret keys in Redis %v (%v), want exactly one", r.fail, keys, err)
		}
	}
	f.requireUp()
}
