package caddytest

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// fleetRoomObject GETs room's admin object on one instance.
func fleetRoomObject(t *testing.T, nd *node, room string) map[string]any {
	t.Helper()
	resp, err := http.Get(nd.admin + "/waiting_room/" + room)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var obj map[string]any
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &obj) != nil {
		t.Fatalf("GET room on %s: %d %s", nd.name, resp.StatusCode, b)
	}
	return obj
}

// TestMultiSessionMax: two caddy processes on one Redis, a room of one slot without
// session_max. session_max PATCHed on one instance ends a busy shopper's session on
// the other: the shopper is queued at the back, told why, and the waiter ahead gets
// the slot. The next session ends at session_max without any request from its visitor,
// and the slot goes to the next waiter. Restoring (null) on the other instance turns
// it off on both.
func TestMultiSessionMax(t *testing.T) {
	t.Parallel() // its own fleet and Redis, and most of its time waiting on the clock: beside the others like it
	srv := testredis.Start(t)
	room := uniqueRoom(t)
	f := startFleet(t, 2, func(int) string { return roomBlock(room, "/shop*", 1, "redis redis://"+srv.Addr) })
	one, two := f.nodes[0], f.nodes[1]

	shopper, waiter, next := newGuest(), newGuest(), newGuest()
	if _, ok, err := shopper.place(one.base, "/shop"); err != nil || !ok {
		t.Fatalf("the shopper was not admitted into an empty room: %v", err)
	}
	if _, ok, err := waiter.place(two.base, "/shop"); err != nil || ok {
		t.Fatalf("the waiter: admitted %v, %v", ok, err)
	}

	patchFleetRoom(t, two, room, `{"session_max": "10s"}`)
	if got := fleetRoomObject(t, one, room)["session_max"]; got != "10s" {
		t.Fatalf("the instance that was not PATCHed shows session_max %v, want 10s", got)
	}

	// The shopper keeps shopping on instance one, the waiter keeps polling on two,
	// until the shopper's time runs out.
	var ended queueAnswer
	requests := 0
	waitFor(t, "the shopper's session to end at session_max", func() bool {
		requests++
		q, ok, err := shopper.place(one.base, "/shop")
		if err != nil {
			t.Fatalf("shopper request %d: %v", requests, err)
		}
		if _, in, err := waiter.place(two.base, "/shop"); err != nil || in && ok {
			t.Fatalf("waiter poll while the shopper is in: admitted %v, %v (capacity 1)", in, err)
		}
		ended = q
		return !ok
	})
	if requests < 2 {
		t.Fatalf("the shopper was stopped at request %d, before session_max could pass", requests)
	}
	if ended.Reason != "session_max" || ended.Position != ended.Waiting || ended.Position < 1 {
		t.Fatalf("the shopper past session_max was told %+v, want reason session_max at the back of the line", ended)
	}
	waitFor(t, "the waiter to get the freed slot", func() bool {
		_, in, err := waiter.place(two.base, "/shop")
		if err != nil {
			t.Fatal(err)
		}
		return in
	})
	if q, in, err := shopper.place(one.base, "/shop"); err != nil || in || q.Position != 1 {
		t.Fatalf("the requeued shopper, once the waiter is in: %+v admitted %v, %v; want first in line", q, in, err)
	}

	// The waiter now holds the slot and makes no request; the requeued shopper and a
	// newcomer poll. The slot frees at session_max and the shopper, first in line, is
	// admitted; the newcomer waits behind.
	if _, in, err := next.place(two.base, "/shop"); err != nil || in {
		t.Fatalf("the newcomer: admitted %v, %v", in, err)
	}
	waitFor(t, "the silent waiter's slot to free at session_max", func() bool {
		_, in, err := shopper.place(one.base, "/shop")
		if err != nil {
			t.Fatal(err)
		}
		if _, nextIn, err := next.place(two.base, "/shop"); err != nil || nextIn {
			t.Fatalf("the newcomer behind the shopper: admitted %v, %v", nextIn, err)
		}
		return in
	})
	if q, in, err := waiter.place(one.base, "/shop"); err != nil || in || q.Reason != "session_max" {
		t.Fatalf("the silent waiter back after session_max: %+v admitted %v, %v; want queued, reason session_max", q, in, err)
	}

	patchFleetRoom(t, one, room, `{"session_max": null}`)
	if got := fleetRoomObject(t, two, room)["session_max"]; got != "" {
		t.Fatalf("after null on one instance, the other shows session_max %v, want off", got)
	}
}
