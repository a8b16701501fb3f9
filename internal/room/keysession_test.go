package room

import (
	"context"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
)

// A keyed client that never sends the room's cookie is ended at session_max as a
// cookie's session is: within queue.TouchEvery of the store ending it, however often
// it comes. Each cookie-less request is let in on this instance's recent confirmation
// of the key, but that confirmation is the store's, not the request's own, so it runs
// out and the store is asked again.
func TestKeyWithoutCookieEndsAtSessionMax(t *testing.T) {
	const sessionMax = 12 * time.Second
	k := newKeyedRoom(t, 1, func(c *Config) { c.SessionMax = sessionMax })
	ctx := context.Background()
	start := k.clk.Now()
	sticky := k.decide(Visit{Key: "acct-sticky"})
	if sticky.Outcome != Admitted {
		t.Fatalf("the sticky account: %v, want admitted", sticky.Outcome)
	}
	waiter := k.decide(Visit{})
	if waiter.Outcome != Queued {
		t.Fatalf("the waiter: %v, want queued", waiter.Outcome)
	}
	cookie := string(waiter.Cookie())
	// Each second the account comes without a cookie and the waiter polls with its
	// own. While the store holds the waiter inside, the account may be let in only
	// within TouchEvery of its session's end: two inside a room of one for longer is
	// the hole.
	holds := func(id queue.VisitorID) bool {
		st, err := k.cfg.Store.Status(ctx, id, k.clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		return st.State == queue.Admitted
	}
	both, waiterIn, letIn := 0, time.Duration(0), 0
	for s := 1; s <= 32; s++ {
		k.clk.set(start.Add(time.Duration(s) * time.Second))
		k.tick(ctx)
		d := k.decide(Visit{Key: "acct-sticky"})
		if d.Outcome == Admitted {
			letIn++
		}
		w := k.decide(Visit{Cookie: cookie})
		if c := w.Cookie(); c != nil {
			cookie = string(c)
		}
		if w.Outcome == Admitted && waiterIn == 0 {
			waiterIn = time.Duration(s) * time.Second
		}
		if d.Outcome == Admitted && holds(waiter.Visitor) {
			both++
		}
	}
	t.Logf("the account was let in %d of 32 times; the waiter at %v", letIn, waiterIn)
	if waiterIn == 0 || waiterIn > sessionMax+queue.TouchEvery {
		t.Errorf("the waiter behind was let in at %v, want by %v", waiterIn, sessionMax+queue.TouchEvery)
	}
	if limit := int(queue.TouchEvery / time.Second); both > limit {
		t.Errorf("the cookie-less account was let in %d times while the waiter held the room's one slot, want at most %d (TouchEvery)", both, limit)
	}
}

// A revoke, an admin's remove and a reset made through one instance end a keyed
// session on another instance of the fleet within queue.TouchEvery, for a client that
// never sends the cookie as for one that does.
func TestKeyEndedOnEveryInstance(t *testing.T) {
	ends := []struct {
		name string
		end  func(t *testing.T, other *Room, id queue.VisitorID)
	}{
		{"revoke", func(t *testing.T, other *Room, id queue.VisitorID) { other.Revoke(context.Background(), id) }},
		{"remove", func(t *testing.T, other *Room, id queue.VisitorID) {
			if err := other.RemoveVisitor(context.Background(), id.String()); err != nil {
				t.Fatal(err)
			}
		}},
		{"reset", func(t *testing.T, other *Room, id queue.VisitorID) {
			if err := other.Reset(context.Background()); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, end := range ends {
		for _, withCookie := range []bool{false, true} {
			name := end.name + "/without cookie"
			if withCookie {
				name = end.name + "/with cookie"
			}
			t.Run(name, func(t *testing.T) {
				one := newKeyedRoom(t, 1, nil)
				two := New(&Config{Name: one.cfg.Name, Config: settings.Config{Runtime: settings.Runtime{Capacity: 1, SessionTTL: one.cfg.SessionTTL, QueueTTL: one.cfg.QueueTTL}},
					Secrets: one.cfg.Secrets, Store: one.cfg.Store, Clock: one.clk, Metrics: noMetrics{}})
				ctx := context.Background()
				start := one.clk.Now()
				first := one.decide(Visit{Key: "alice"})
				if first.Outcome != Admitted {
					t.Fatalf("alice: %v, want admitted", first.Outcome)
				}
				cookie := ""
				if withCookie {
					cookie = string(first.Cookie())
				}
				bob := two.decideAt(t, Visit{}, start)
				if bob.Outcome != Queued {
					t.Fatalf("bob: %v, want queued", bob.Outcome)
				}
				// Alice comes every second on instance one; at 3 s the session is ended
				// through instance two, and bob takes the slot (after a reset, as the
				// new visitor his cookie makes him, into the empty room).
				endAt := start.Add(3 * time.Second)
				bound := endAt.Add(queue.TouchEvery)
				late := 0
				for s := 1; s <= 20; s++ {
					now := start.Add(time.Duration(s) * time.Second)
					one.clk.set(now)
					if now.Equal(endAt) {
						end.end(t, two, first.Visitor)
						two.tick(ctx)
						if d := two.decideAt(t, Visit{Cookie: string(bob.Cookie())}, now); d.Outcome != Admitted {
							t.Fatalf("bob after the %s: %v, want admitted", end.name, d.Outcome)
						}
					}
					d := one.decide(Visit{Key: "alice", Cookie: cookie})
					if d.Outcome == Admitted && !now.Before(bound) {
						late++
					}
					if withCookie && d.Cookie() != nil {
						cookie = string(d.Cookie())
					}
				}
				if late > 0 {
					t.Errorf("instance one let alice in %d times at or past %v after the %s through instance two", late, queue.TouchEvery, end.name)
				}
			})
		}
	}
}

// decideAt decides v on rm at now.
func (rm *Room) decideAt(t *testing.T, v Visit, now time.Time) Decision {
	t.Helper()
	v.Now = now
	var d Decision
	rm.Decide(context.Background(), &v, &d)
	return d
}

// A key's other devices are told that session_max ended the key's time, as the
// device it was let in on is: the phone first seen on another instance, the tablet
// let in on this instance's recent confirmation, and a client that keeps no cookie.
func TestKeySessionMaxToldOnEveryDevice(t *testing.T) {
	const sessionMax = 2 * time.Minute
	for _, device := range []string{"phone on another instance", "tablet on this instance", "client without a cookie"} {
		t.Run(device, func(t *testing.T) {
			one := newKeyedRoom(t, 1, func(c *Config) { c.SessionMax, c.SessionTTL, c.QueueTTL = sessionMax, 5*time.Minute, 5*time.Minute })
			two := New(&Config{Name: one.cfg.Name, Config: settings.Config{Runtime: settings.Runtime{Capacity: 1, SessionTTL: one.cfg.SessionTTL, QueueTTL: one.cfg.QueueTTL,
				SessionMax: sessionMax}}, Secrets: one.cfg.Secrets, Store: one.cfg.Store, Clock: one.clk, Metrics: noMetrics{}})
			start := one.clk.Now()
			laptop := one.decide(Visit{Key: "alice"})
			if laptop.Outcome != Admitted {
				t.Fatalf("alice's laptop: %v, want admitted", laptop.Outcome)
			}
			if bob := one.decide(Visit{Key: "bob"}); bob.Outcome != Queued {
				t.Fatalf("bob: %v, want queued", bob.Outcome)
			}
			cookie := ""
			at := start.Add(30 * time.Second)
			switch device {
			case "phone on another instance":
				phone := two.decideAt(t, Visit{Key: "alice"}, at)
				cookie = string(phone.Cookie())
			case "tablet on this instance":
				// The laptop's request confirms the session here; the tablet comes
				// within TouchEvery of it.
				one.decide(Visit{Key: "alice", Cookie: string(laptop.Cookie()), Now: at})
				tablet := one.decide(Visit{Key: "alice", Now: at.Add(time.Second)})
				cookie = string(tablet.Cookie())
			case "client without a cookie":
				one.decide(Visit{Key: "alice", Cookie: string(laptop.Cookie()), Now: start.Add(sessionMax - 2*time.Second)})
			}
			if device != "client without a cookie" && cookie == "" {
				t.Fatalf("the %s got no cookie", device)
			}
			end := start.Add(sessionMax + time.Second)
			one.clk.set(end)
			one.tick(context.Background()) // the store ends the session; bob is let in
			d := one.decide(Visit{Key: "alice", Cookie: cookie, Now: end})
			if d.Outcome != Queued || d.Reason != ReasonSessionMax {
				t.Fatalf("the %s at session_max: %v with reason %q, want queued with reason %q", device, d.Outcome, d.Reason, ReasonSessionMax)
			}
		})
	}
}
