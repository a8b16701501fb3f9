package caddytest

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// adaptPhase is how long a phase of the adaptive capacity tests may take before the
// test gives up: many control periods (2s each).
const adaptPhase = 90 * time.Second

// adaptFleet starts a shop (limit at once, service each), two caddy processes on one
// Redis with room in front of the shop under adapt, and shoppers on both.
func adaptFleet(t *testing.T, limit int, capacity int, adapt string, n, items int) (*shopProc, *fleet, *shoppers, *testredis.Server, string) {
	t.Helper()
	srv := testredis.Start(t)
	shop := startShop(t, limit, 100*time.Millisecond)
	room := uniqueRoom(t)
	f := startFleet(t, 2, func(int) string {
		return roomBlock(room, "/shop*", capacity, "redis redis://"+srv.Addr, "adapt {\n"+adapt+"\n\t\t}") + shop.route("/shop*")
	})
	s := startShoppers(n, items, []string{f.nodes[0].base, f.nodes[1].base}, "/shop")
	t.Cleanup(s.stop)
	return shop, f, s, srv, room
}

// watchAdapt polls room's adapt object on nd until ok says so or adaptPhase passes,
// and returns the last state read.
func watchAdapt(t *testing.T, nd *node, room, what string, ok func(adaptState) bool) adaptState {
	t.Helper()
	deadline := time.Now().Add(adaptPhase)
	var last adaptState
	for time.Now().Before(deadline) {
		a, err := readAdapt(t, nd, room)
		if err == nil {
			last = a
			if ok(a) {
				return a
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("gave up after %v waiting for %s; last: capacity %d, p90 %v, %q", adaptPhase, what, last.Capacity, last.p90(), last.reason())
	return last
}

// TestAdaptFollowsTheShop: a real shop process that serves 8 requests at once, 100ms
// each, behind two caddy processes on one Redis, with 40 shoppers who, once
// admitted, make 8 requests each and check out. The room starts at capacity 16 with a
// p90 target of 300ms: it finds room above 16; when the shop's limit drops to 2 the
// capacity comes down, and when it is back at 8 the capacity goes up again; the
// shop's p90 ends under the target, and both instances report the same capacity,
// which the shop is told in {http.waiting_room.capacity}.
func TestAdaptFollowsTheShop(t *testing.T) {
	const target = 300 * time.Millisecond
	shop, f, shoppers, _, room := adaptFleet(t, 8, 16, "\t\t\tlatency 300ms\n\t\t\tmin 2\n\t\t\tmax 60", 40, 8)
	one, two := f.nodes[0], f.nodes[1]

	healthy := watchAdapt(t, one, room, "a raise while the shop keeps up", func(a adaptState) bool {
		return strings.HasPrefix(a.reason(), "raised") && a.Capacity > 16
	})
	t.Logf("healthy: capacity %d, p90 %v, %s", healthy.Capacity, healthy.p90(), healthy.reason())
	top := watchAdapt(t, one, room, "the capacity to stop climbing near the shop's knee", func(a adaptState) bool {
		return strings.HasPrefix(a.reason(), "lowered") || strings.HasPrefix(a.reason(), "held at max")
	})
	t.Logf("at the knee: capacity %d, p90 %v, %s", top.Capacity, top.p90(), top.reason())
	if top.Capacity >= 60 {
		t.Fatalf("the capacity climbed to its max %d: a shop of 8 at once, 100ms each, cannot keep 300ms for 60", top.Capacity)
	}

	shop.set(2, -1)
	slow := watchAdapt(t, two, room, "the capacity to come down when the shop slows", func(a adaptState) bool {
		return strings.HasPrefix(a.reason(), "lowered: p90") && a.Capacity < top.Capacity/2
	})
	t.Logf("shop slowed to 2 at once: capacity %d, p90 %v, %s", slow.Capacity, slow.p90(), slow.reason())

	shop.set(8, -1)
	recovered := watchAdapt(t, one, room, "the capacity to go up again when the shop recovers", func(a adaptState) bool {
		return strings.HasPrefix(a.reason(), "raised") && a.Capacity > slow.Capacity*3/2
	})
	t.Logf("shop back at 8: capacity %d, p90 %v, %s", recovered.Capacity, recovered.p90(), recovered.reason())

	// The shop's p90 ends under the target: of the next 5 periods decided on, most
	// met it (the law probes just past the knee now and then, and cuts back).
	met, seen, last := 0, 0, ""
	watchAdapt(t, one, room, "5 more periods", func(a adaptState) bool {
		if a.Adapt == nil || a.reason() == last && a.Adapt.Requests != nil {
			return false
		}
		last = a.reason() + strconv.Itoa(a.Capacity)
		seen++
		if p := a.p90(); p >= 0 && p <= target {
			met++
		}
		return seen >= 5
	})
	if met < 3 {
		t.Errorf("the shop's p90 met the 300ms target in %d of the last 5 periods, want most", met)
	}

	var a1, a2 adaptState
	waitFor(t, "both instances to report the same capacity", func() bool {
		var err1, err2 error
		a1, err1 = readAdapt(t, one, room)
		a2, err2 = readAdapt(t, two, room)
		return err1 == nil && err2 == nil && a1.Capacity == a2.Capacity && *a1.Adapt.Capacity == *a2.Adapt.Capacity
	})
	waitFor(t, "the shop to be told the capacity in force", func() bool {
		return shoppers.capacity.Load() > 0
	})
	if n := shoppers.errs.n.Load(); n > 0 {
		t.Errorf("%d shopper errors, first: %v", n, shoppers.errs.msgs)
	}
	for _, nd := range f.nodes {
		if n := metricAt(t, nd.admin, "caddy_waiting_room_upstream_ttfb_seconds_count", room); n <= 0 {
			t.Errorf("%s: the time-to-first-byte histogram counts %v requests, want the shoppers'", nd.name, n)
		}
	}
	t.Logf("the shop answered %d admitted requests, %d failed", shoppers.requests.Load(), shoppers.failed.Load())
}

// TestAdaptFailuresAndOutage: the shop answers 503 to a third of its requests, and
// the capacity comes down for the errors; then Redis goes away, and the capacity in
// force (what the shop is told) holds, on both instances, for the outage.
func TestAdaptFailuresAndOutage(t *testing.T) {
	shop, f, shoppers, srv, room := adaptFleet(t, 50, 30, "\t\t\tlatency 2s\n\t\t\terrors 5%\n\t\t\tmin 2\n\t\t\tmax 100", 40, 8)
	shop.set(0, 0.3)
	failing := watchAdapt(t, f.nodes[0], room, "the capacity to come down for the failures", func(a adaptState) bool {
		return strings.HasPrefix(a.reason(), "lowered: errors") && a.Capacity < 30
	})
	t.Logf("failing: capacity %d, %s", failing.Capacity, failing.reason())
	shop.set(0, 0)

	before := shoppers.capacity.Load()
	srv.Stop()
	// Through five control periods of outage, every answer the shop gets says the
	// same capacity: the one in force when Redis went away, or one decided in the
	// instant before.
	seen := map[int64]bool{}
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		seen[shoppers.capacity.Load()] = true
		time.Sleep(100 * time.Millisecond)
	}
	if len(seen) > 2 {
		t.Errorf("the capacity in force moved during the outage: %v (before it: %d)", seen, before)
	}
	for _, nd := range f.nodes {
		if !nd.alive() {
			t.Fatalf("%s died in the outage:\n%s", nd.name, tail(nd.log(), 30))
		}
		if strings.Contains(nd.log(), "panic") {
			t.Errorf("%s logged a panic:\n%s", nd.name, tail(nd.log(), 30))
		}
	}
}
