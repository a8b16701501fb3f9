package caddytest

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// TestNoShowGivesTheSlotBack: a waiter admitted while not listening (no socket, no
// poll) who makes no request within arrive_ttl gives the slot back, and the waiter
// behind is let in; the no-show coming back is first, ahead of one who came
// meanwhile, is told its turn came while it was away, and is the next one in. On one
// caddy process with the memory store, and on two sharing one Redis, the waiters on
// different instances. Counts and order only: the admin object's no_shows and the
// no_shows_total counter, summed over the instances, are 1.
func TestNoShowGivesTheSlotBack(t *testing.T) {
	for _, tc := range []struct {
		name      string
		instances int
		redis     bool
	}{
		{"memory, one instance", 1, false},
		{"redis, two instances", 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			room := uniqueRoom(t)
			store := "memory"
			if tc.redis {
				store = "redis redis://" + testredis.Start(t).Addr
			}
			// queue_ttl 5s: a page without a socket polls every 2s, so arrive_ttl may be 5s.
			f := startFleet(t, tc.instances, func(int) string {
				return roomBlock(room, "/shop*", 1, store,
					"queue_ttl 5s", "away_ttl 1m", "session_ttl 1h", "arrive_ttl 5s")
			})
			a, b := f.nodes[0], f.nodes[len(f.nodes)-1]
			holder, quiet, second, third := newGuest(), newGuest(), newGuest(), newGuest()
			mustPlace := func(g *guest, base string) noShowAnswer {
				t.Helper()
				code, body, err := g.get(base, "/shop", "application/json")
				var q noShowAnswer
				if err != nil || json.Unmarshal([]byte(body), &q) != nil || q.Status != "queued" {
					t.Fatalf("%s/shop: %d %q %v, want queued", base, code, short(body), err)
				}
				return q
			}
			if _, ok, err := holder.place(a.base, "/shop"); err != nil || !ok {
				t.Fatalf("the first visitor was not admitted: %v", err)
			}
			mustPlace(quiet, a.base)
			mustPlace(quiet, a.base) // its page answers once, as a real browser's does, then nothing
			if q := mustPlace(second, b.base); q.Position != 2 {
				t.Fatalf("the second waiter: %+v, want position 2", q)
			}

			// The holder checks out: quiet's turn, but quiet is asleep. second keeps polling.
			if _, body, err := holder.get(a.base, "/shop/done", ""); err != nil || body != "done" {
				t.Fatalf("checkout: %q %v", body, err)
			}
			waitFor(t, "the quiet waiter to be admitted", func() bool {
				mustPlace(second, b.base)
				return fleetRoom(t, a, room).Waiting == 1 && fleetRoom(t, a, room).Active == 1
			})
			if got := noShowsOf(t, a, room); got != 0 {
				t.Fatalf("no_shows right after the admission: %d, want 0", got)
			}
			waitFor(t, "the second waiter to be let in in the no-show's slot", func() bool {
				_, ok, err := second.place(b.base, "/shop")
				return err == nil && ok
			})
			for _, nd := range f.nodes {
				if got := noShowsOf(t, nd, room); got != 1 {
					t.Fatalf("no_shows on %s: %d, want 1", nd.name, got)
				}
			}
			counted := 0.0
			for _, nd := range f.nodes {
				counted += fleetMetric(t, nd, "caddy_waiting_room_no_shows_total", room)
			}
			if counted != 1 {
				t.Fatalf("caddy_waiting_room_no_shows_total summed over the instances: %v, want 1", counted)
			}

			// third comes while quiet is away; quiet comes back, on the other instance.
			if q := mustPlace(third, a.base); q.Position != 1 {
				t.Fatalf("the third waiter while the no-show is away: %+v, want position 1", q)
			}
			back := mustPlace(quiet, b.base)
			if back.Position != 1 || !back.Returned || !back.Missed {
				t.Fatalf("the no-show back: %+v, want position 1, returned and missed", back)
			}
			if q := mustPlace(third, a.base); q.Position != 2 {
				t.Fatalf("the third waiter once the no-show is back: %+v, want position 2", q)
			}
			if _, body, err := second.get(b.base, "/shop/done", ""); err != nil || body != "done" {
				t.Fatalf("checkout: %q %v", body, err)
			}
			waitFor(t, "the no-show to be let in first", func() bool {
				mustPlace(third, a.base)
				_, ok, err := quiet.place(a.base, "/shop")
				return err == nil && ok
			})
			if q := mustPlace(third, b.base); q.Position != 1 {
				t.Fatalf("the third waiter at the end: %+v, want position 1", q)
			}

			// A bad arrive_ttl through the admin API is a 400 that says why.
			for body, want := range map[string]string{
				`{"arrive_ttl":"banana"}`: `arrive_ttl: bad duration \"banana\"`,
				`{"arrive_ttl":"2s"}`:     "arrive_ttl must be at least 5s, got 2s",
				`{"arrive_ttl":"-1s"}`:    "arrive_ttl must be 0 (off) or a positive duration, got -1s",
			} {
				if code, got := adminAt(t, b.admin, http.MethodPatch, "/waiting_room/"+room, body); code != http.StatusBadRequest || !strings.Contains(got, want) {
					t.Errorf("PATCH %s: %d %s, want 400 saying %q", body, code, short(got), want)
				}
			}
			f.requireUp()
		})
	}
}

// noShowAnswer is the queued JSON answer with the field a no-show back is told.
type noShowAnswer struct {
	queueAnswer
	Missed bool `json:"missed"`
}

// noShowsOf reads the room object's no_shows from nd's admin API.
func noShowsOf(t *testing.T, nd *node, room string) int {
	t.Helper()
	_, body := adminAt(t, nd.admin, http.MethodGet, "/waiting_room/"+room, "")
	var obj struct {
		NoShows *int `json:"no_shows"`
	}
	if err := json.Unmarshal([]byte(body), &obj); err != nil || obj.NoShows == nil {
		t.Fatalf("room object on %s without no_shows: %s", nd.name, short(body))
	}
	return *obj.NoShows
}

// fleetMetric reads one sample of nd's /metrics.
func fleetMetric(t *testing.T, nd *node, name, room string) float64 {
	t.Helper()
	resp, err := http.Get(nd.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\{room="` + regexp.QuoteMeta(room) + `"\} (\S+)$`)
	m := re.FindSubmatch(body)
	if m == nil {
		t.Fatalf("no %s for room %s in %s's /metrics", name, room, nd.name)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}
