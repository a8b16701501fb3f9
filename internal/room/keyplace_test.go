package room

import (
	"context"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// Issue 40, item 7: a device that opened a keyed hand-off code without the key (a
// kiosk) while the key waited holds a cookie naming the key's fixed id. Once the key's
// place has ended and the key queues again elsewhere, that cookie must not land on
// the new place: its socket's "leave" would remove it. Such a cookie lasts as long as
// a place lives after it was last heard from (away_ttl here), renewed by each of the
// device's own requests (holdPlace), so a kiosk gone quiet that long is a new visitor
// whatever the key did meanwhile: here its place lived on, kept by the key's own
// device, ended, and the key queued again from home.
func TestKeyedHandoffCookieDoesNotOwnTheNextPlace(t *testing.T) {
	const away = 10 * time.Minute
	k := newKeyedRoom(t, 1, func(c *Config) { c.SessionTTL, c.AwayTTL = time.Hour, away })
	ctx := context.Background()
	start := k.clk.Now()
	k.fill(t, 1)
	laptop := k.decide(Visit{Key: "alice"})
	if laptop.Outcome != Queued {
		t.Fatalf("alice: %v, want queued", laptop.Outcome)
	}
	code := k.decide(Visit{Key: "alice", Cookie: string(laptop.Cookie()), HandoffNew: true}).Handoff
	if code == "" {
		t.Fatal("no hand-off code for alice's place")
	}
	kiosk := k.decide(Visit{Handoff: code})
	if kiosk.Outcome != Queued || kiosk.Visitor != laptop.Visitor {
		t.Fatalf("the kiosk with alice's code: %v as %v, want her place", kiosk.Outcome, kiosk.Visitor)
	}
	// The kiosk goes quiet; alice's laptop keeps her place, polling, past away_ttl.
	cookie := string(laptop.Cookie())
	at := start
	for at.Sub(start) < away+time.Minute {
		at = at.Add(20 * time.Second)
		k.clk.set(at)
		d := k.decide(Visit{Key: "alice", Cookie: cookie})
		if d.Outcome != Queued || d.Visitor != laptop.Visitor {
			t.Fatalf("alice's laptop at %v: %v as %v, want her place", at.Sub(start), d.Outcome, d.Visitor)
		}
		if c := d.Cookie(); c != nil {
			cookie = string(c)
		}
	}
	// Alice's place ends, and she queues again from home.
	if _, err := k.cfg.Store.Leave(ctx, laptop.Visitor); err != nil {
		t.Fatal(err)
	}
	if home := k.decide(Visit{Key: "alice"}); home.Outcome != Queued || home.Visitor != laptop.Visitor {
		t.Fatalf("alice from home: %v as %v, want queued on her key's id", home.Outcome, home.Visitor)
	}
	// The kiosk comes back, its page and its socket with the old cookie: a new
	// visitor, not a key's, and its socket's leave gives up its own place only.
	for _, socket := range []bool{false, true} {
		d := k.decide(Visit{Cookie: string(kiosk.Cookie()), Socket: socket})
		if d.Visitor == laptop.Visitor {
			t.Fatalf("the kiosk's old cookie (socket %v) is %v on alice's new place: its socket's leave would remove her", socket, d.Outcome)
		}
		if want := map[bool]Outcome{false: Queued, true: WaitingSocket}[socket]; d.Outcome != want || d.Place != queue.Queued {
			t.Fatalf("the kiosk's old cookie (socket %v): %v, want queued as a new visitor (%v)", socket, d.Outcome, want)
		}
		if tok, ok := k.keys.Load().Open(string(d.Cookie()), k.clk.Now()); !ok || tok.Keyed || tok.ID != d.Visitor {
			t.Fatalf("the kiosk's new cookie (socket %v): %+v (opened %v), want an unkeyed one for %v", socket, tok, ok, d.Visitor)
		}
		if _, err := k.cfg.Store.Leave(ctx, d.Visitor); err != nil { // the socket's {"type":"leave"}
			t.Fatal(err)
		}
		if st, err := k.cfg.Store.Status(ctx, laptop.Visitor, k.clk.Now()); err != nil || st.State != queue.Queued {
			t.Fatalf("alice's new place after the kiosk left: %v (%v), want queued", st.State, err)
		}
	}
}

// The window item 7 leaves: a kiosk's cookie for a key's place lasts away_ttl (or
// queue_ttl, with none) from the kiosk's last request, and within that the key's id
// is all it names. A key whose place ends otherwise than by lapsing (the key leaves,
// an admin removes it, it is let in and its session ends) and that queues again while
// the kiosk is quiet, within that bound of the kiosk's last request, has the kiosk's
// cookie land on the new place. The test holds the bound to the second, with away_ttl
// and without.
func TestKeyedHandoffCookieWindow(t *testing.T) {
	for _, c := range []struct {
		name        string
		away, bound time.Duration
	}{
		{"away_ttl", 10 * time.Minute, 10 * time.Minute},
		{"no away_ttl", 0, 30 * time.Second}, // the test room's queue_ttl
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, quiet := range []time.Duration{c.bound - time.Second, c.bound} {
				k := newKeyedRoom(t, 1, func(cfg *Config) { cfg.SessionTTL, cfg.AwayTTL = time.Hour, c.away })
				ctx := context.Background()
				start := k.clk.Now()
				k.fill(t, 1)
				laptop := k.decide(Visit{Key: "alice"})
				code := k.decide(Visit{Key: "alice", Cookie: string(laptop.Cookie()), HandoffNew: true}).Handoff
				kiosk := k.decide(Visit{Handoff: code})
				if kiosk.Outcome != Queued || kiosk.Visitor != laptop.Visitor {
					t.Fatalf("the kiosk with alice's code: %v as %v, want her place", kiosk.Outcome, kiosk.Visitor)
				}
				if want := start.Add(c.bound); !kiosk.CookieExpires.Equal(want) {
					t.Fatalf("the kiosk's cookie expires %v after its request, want %v", kiosk.CookieExpires.Sub(start), c.bound)
				}
				// Alice leaves at once and queues again from home; the kiosk comes
				// back after quiet.
				if _, err := k.cfg.Store.Leave(ctx, laptop.Visitor); err != nil {
					t.Fatal(err)
				}
				if home := k.decide(Visit{Key: "alice"}); home.Outcome != Queued {
					t.Fatalf("alice from home: %v, want queued", home.Outcome)
				}
				k.clk.set(start.Add(quiet - time.Second))
				k.decide(Visit{Key: "alice"}) // her home device keeps her new place
				k.clk.set(start.Add(quiet))
				d := k.decide(Visit{Cookie: string(kiosk.Cookie())})
				if on, inside := d.Visitor == laptop.Visitor, quiet < c.bound; on != inside {
					t.Fatalf("the kiosk quiet for %v: on alice's new place %v, want %v (the window is %v)", quiet, on, inside, c.bound)
				}
			}
		})
	}
}

// A kiosk that keeps polling with a key's place it was handed keeps sharing it,
// for as long as it likes and whatever the key's own devices do (here they are
// quiet throughout): each request renews its cookie. When the place's turn comes it
// is let in on it, as the key's session.
func TestKeyedHandoffKioskThatPollsKeepsThePlace(t *testing.T) {
	k := newKeyedRoom(t, 1, func(c *Config) { c.SessionTTL, c.AwayTTL = time.Hour, 10*time.Minute })
	ctx := context.Background()
	start := k.clk.Now()
	filler := k.decide(Visit{})
	if filler.Outcome != Admitted {
		t.Fatalf("filling the room: %v, want admitted", filler.Outcome)
	}
	laptop := k.decide(Visit{Key: "alice"})
	code := k.decide(Visit{Key: "alice", Cookie: string(laptop.Cookie()), HandoffNew: true}).Handoff
	kiosk := k.decide(Visit{Handoff: code})
	if kiosk.Outcome != Queued || kiosk.Visitor != laptop.Visitor {
		t.Fatalf("the kiosk with alice's code: %v as %v, want her place", kiosk.Outcome, kiosk.Visitor)
	}
	cookie := string(kiosk.Cookie())
	at := start
	for at.Sub(start) < time.Hour-time.Minute { // six times away_ttl; the filler's session holds
		at = at.Add(20 * time.Second)
		k.clk.set(at)
		d := k.decide(Visit{Cookie: cookie})
		if d.Outcome != Queued || d.Visitor != laptop.Visitor {
			t.Fatalf("the kiosk polling at %v: %v as %v, want alice's place", at.Sub(start), d.Outcome, d.Visitor)
		}
		cookie = string(d.Cookie())
	}
	k.Revoke(ctx, filler.Visitor)
	k.tick(ctx)
	d := k.decide(Visit{Cookie: cookie})
	if d.Outcome != Admitted || d.Visitor != laptop.Visitor {
		t.Fatalf("the kiosk at alice's turn: %v as %v, want let in on her place", d.Outcome, d.Visitor)
	}
	if tok, ok := k.keys.Load().Open(string(d.Cookie()), k.clk.Now()); !ok || !tok.Keyed || tok.State != queue.Admitted {
		t.Fatalf("the kiosk's cookie at alice's turn: %+v (opened %v), want the key's admitted one", tok, ok)
	}
	if home := k.decide(Visit{Key: "alice"}); home.Outcome != Admitted || home.Visitor != laptop.Visitor {
		t.Fatalf("alice from her laptop: %v as %v, want let in with the kiosk", home.Outcome, home.Visitor)
	}
}

// A device that opened a keyed code for the key's admitted session, without the key
// (a kiosk), is let in on that session only: once it has ended and the key is let in
// again, the kiosk's cookie, which names the key's id, is not the new session's.
func TestKeyedHandoffSessionDoesNotOwnTheNextSession(t *testing.T) {
	k := newKeyedRoom(t, 1, func(c *Config) { c.SessionTTL = 5 * time.Minute })
	ctx := context.Background()
	start := k.clk.Now()
	laptop := k.decide(Visit{Key: "alice"})
	if laptop.Outcome != Admitted {
		t.Fatalf("alice: %v, want admitted", laptop.Outcome)
	}
	code := k.decide(Visit{Key: "alice", Cookie: string(laptop.Cookie()), HandoffNew: true}).Handoff
	kiosk := k.decide(Visit{Handoff: code, Now: start.Add(10 * time.Second)})
	if kiosk.Outcome != Admitted || kiosk.Visitor != laptop.Visitor {
		t.Fatalf("the kiosk with alice's code: %v as %v, want her session", kiosk.Outcome, kiosk.Visitor)
	}
	if d := k.decide(Visit{Cookie: string(kiosk.Cookie()), Now: start.Add(20 * time.Second)}); d.Outcome != Admitted || d.Visitor != laptop.Visitor {
		t.Fatalf("the kiosk on alice's session: %v as %v, want let in on it", d.Outcome, d.Visitor)
	}
	// Alice checks out, and is let in again from home a minute later; her home
	// device's request confirms the new session on this instance.
	k.Revoke(ctx, laptop.Visitor)
	k.clk.set(start.Add(80 * time.Second))
	if home := k.decide(Visit{Key: "alice"}); home.Outcome != Admitted {
		t.Fatalf("alice from home: %v, want admitted", home.Outcome)
	}
	for _, at := range []time.Duration{81 * time.Second, 90 * time.Second} {
		d := k.decide(Visit{Cookie: string(kiosk.Cookie()), Now: start.Add(at)})
		if d.Visitor == laptop.Visitor {
			t.Fatalf("the kiosk's old cookie at %v is %v on alice's new session", at, d.Outcome)
		}
	}
}

// The cost of the bound, held here so that it is known: a kiosk whose page waits on
// a live WebSocket sends no requests, so nothing renews its cookie, though the hub
// hears from the place all along. Past away_ttl from the socket's opening its cookie
// does not open: when its turn comes and it loads the shop, it is a new visitor, and
// the key's own device is let in.
func TestKeyedHandoffKioskOnASocketAloneLosesItsHold(t *testing.T) {
	const away = 10 * time.Minute
	k := newKeyedRoom(t, 1, func(c *Config) { c.SessionTTL, c.AwayTTL = time.Hour, away })
	ctx := context.Background()
	start := k.clk.Now()
	filler := k.decide(Visit{})
	laptop := k.decide(Visit{Key: "alice"})
	code := k.decide(Visit{Key: "alice", Cookie: string(laptop.Cookie()), HandoffNew: true}).Handoff
	kiosk := k.decide(Visit{Handoff: code, Page: true})
	socket := k.decide(Visit{Cookie: string(kiosk.Cookie()), Socket: true})
	if socket.Outcome != WaitingSocket || socket.Visitor != laptop.Visitor {
		t.Fatalf("the kiosk's socket: %v as %v, want alice's place", socket.Outcome, socket.Visitor)
	}
	for at := 20 * time.Second; at <= away+time.Minute; at += 20 * time.Second {
		k.clk.set(start.Add(at))
		if err := k.cfg.Store.Heartbeat(ctx, []queue.VisitorID{laptop.Visitor}, k.clk.Now()); err != nil { // the hub
			t.Fatal(err)
		}
	}
	k.Revoke(ctx, filler.Visitor)
	k.tick(ctx)
	if st, err := k.cfg.Store.Status(ctx, laptop.Visitor, k.clk.Now()); err != nil || st.State != queue.Admitted {
		t.Fatalf("alice's place at its turn: %v (%v), want admitted", st.State, err)
	}
	if d := k.decide(Visit{Cookie: string(socket.Cookie())}); d.Visitor == laptop.Visitor {
		t.Fatalf("the kiosk loading the shop %v after its socket opened: %v on alice's place, want a new visitor (its cookie lasts %v)", k.clk.Now().Sub(start), d.Outcome, away)
	}
	if d := k.decide(Visit{Key: "alice", Cookie: string(laptop.Cookie())}); d.Outcome != Admitted || d.Visitor != laptop.Visitor {
		t.Fatalf("alice's laptop at her turn: %v as %v, want let in", d.Outcome, d.Visitor)
	}
}
