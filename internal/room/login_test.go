package room

import (
	"testing"
	"time"
)

// A waiter who logs in keeps the place it took without a key: the key gets the same
// ticket and position, every device of the key sees it, the room counts one waiter,
// and the cookie it came with is told the place moved.
func TestLogInKeepsTheLine(t *testing.T) {
	k := newKeyedRoom(t, 1, nil)
	k.fill(t, 1)
	before := k.decide(Visit{})
	behind := k.decide(Visit{})
	if before.Outcome != Queued || before.Status.Position != 1 {
		t.Fatalf("the waiter: %v at %d, want queued at 1", before.Outcome, before.Status.Position)
	}
	k.clk.set(k.clk.Now().Add(10 * time.Second)) // the waiter joined before now
	in := k.decide(Visit{Key: "alice", Cookie: string(before.Cookie())})
	if in.Outcome != Queued || in.Status.Ticket != before.Status.Ticket || in.Status.Position != 1 || in.Visitor == before.Visitor {
		t.Fatalf("logged in: %v as %v with ticket %d at %d, want queued as the key with ticket %d at 1",
			in.Outcome, in.Visitor, in.Status.Ticket, in.Status.Position, before.Status.Ticket)
	}
	was, _ := k.keys.Load().Open(string(before.Cookie()), k.clk.Now())
	tok, ok := k.keys.Load().Open(string(in.Cookie()), k.clk.Now())
	if !ok || tok.ID != in.Visitor || !tok.Keyed || !tok.Since.Equal(was.Since) {
		t.Fatalf("the logged-in cookie opens as %+v, %v; want the key's, marked keyed", tok, ok)
	}
	phone := k.decide(Visit{Key: "alice"})
	if phone.Visitor != in.Visitor || phone.Status.Position != 1 {
		t.Fatalf("alice's phone: %v at %d, want the same place at 1", phone.Visitor, phone.Status.Position)
	}
	if st := k.stats(t); st.Waiting != 2 {
		t.Fatalf("%d waiting, want 2 (alice once, the one behind)", st.Waiting)
	}
	if d := k.decide(Visit{Cookie: string(before.Cookie())}); d.Outcome != Moved {
		t.Fatalf("the cookie from before the log-in: %v, want moved", d.Outcome)
	}
	if d := k.decide(Visit{Cookie: string(behind.Cookie())}); d.Status.Position != 2 {
		t.Fatalf("the waiter behind: at %d, want 2", d.Status.Position)
	}
}

// A visitor let in who then logs in (the shop's log-in page is behind the room) stays
// in: the key takes the admitted session, on this instance or one that asks the
// store, and its slot is one slot: when the key leaves, the waiter goes in.
func TestLogInKeepsTheSession(t *testing.T) {
	for _, elsewhere := range []bool{false, true} {
		k := newKeyedRoom(t, 1, nil)
		let, waiter := k.decide(Visit{}), k.decide(Visit{})
		if let.Outcome != Admitted || waiter.Outcome != Queued {
			t.Fatalf("outcomes %v, %v; want admitted, queued", let.Outcome, waiter.Outcome)
		}
		if elsewhere {
			k.forgetTouched(let.Visitor) // as on an instance that never confirmed it
		}
		in := k.decide(Visit{Key: "alice", Cookie: string(let.Cookie())})
		if in.Outcome != Admitted || in.Visitor == let.Visitor {
			t.Fatalf("elsewhere %v: logged in after being let in: %v as %v, want admitted as the key", elsewhere, in.Outcome, in.Visitor)
		}
		if tok, ok := k.keys.Load().Open(string(in.Cookie()), k.clk.Now()); !ok || tok.ID != in.Visitor || !tok.Keyed {
			t.Fatalf("elsewhere %v: the cookie opens as %+v, %v; want the key's, marked keyed", elsewhere, tok, ok)
		}
		if st := k.stats(t); st.Active != 1 || st.Waiting != 1 {
			t.Fatalf("elsewhere %v: after the log-in %+v, want one active and the waiter still waiting", elsewhere, st)
		}
		if _, err := k.cfg.Store.Leave(t.Context(), in.Visitor); err != nil {
			t.Fatal(err)
		}
		k.tick(t.Context())
		if d := k.decide(Visit{Cookie: string(waiter.Cookie())}); d.Outcome != Admitted {
			t.Fatalf("elsewhere %v: the waiter after alice left: %v, want admitted", elsewhere, d.Outcome)
		}
	}
}

// A session past session_max does not follow a log-in: it is over, and the key is
// new like anyone's whose session ended.
func TestLogInAfterSessionMaxIsNew(t *testing.T) {
	k := newKeyedRoom(t, 1, func(c *Config) { c.SessionMax, c.SessionTTL = 2*time.Minute, time.Hour })
	let := k.decide(Visit{})
	if let.Outcome != Admitted {
		t.Fatalf("the visitor: %v, want admitted", let.Outcome)
	}
	k.clk.set(k.clk.Now().Add(2*time.Minute + time.Second)) // before the step ends it
	if d := k.decide(Visit{Key: "alice", Cookie: string(let.Cookie())}); d.Outcome == Admitted {
		t.Fatal("a session past session_max was let in again by logging in")
	}
}

// A key that holds a place already keeps it: a cookie's other place is not merged
// into it, or swapped for it, so logging in on a second device never gains a place.
func TestLogInWithAPlaceKeepsTheKeys(t *testing.T) {
	k := newKeyedRoom(t, 1, nil)
	k.fill(t, 1)
	alice := k.decide(Visit{Key: "alice"})
	other := k.decide(Visit{})
	d := k.decide(Visit{Key: "alice", Cookie: string(other.Cookie())})
	if d.Visitor != alice.Visitor || d.Status.Position != 1 {
		t.Fatalf("alice logging in on a device that waits at 2: %v at %d, want hers at 1", d.Visitor, d.Status.Position)
	}
	if st := k.stats(t); st.Waiting != 2 {
		t.Fatalf("%d waiting, want 2: alice's, and the other place, which lapses on its own", st.Waiting)
	}
}

// Two devices logging in as one key at once, each with a place of its own: one place
// becomes the key's, the other device finds it. The store's move refuses a key that
// holds a place in the same step it moves one.
func TestLogInTwiceGivesOnePlace(t *testing.T) {
	k := newKeyedRoom(t, 1, nil)
	k.fill(t, 1)
	laptop, phone := k.decide(Visit{}), k.decide(Visit{})
	a := k.decide(Visit{Key: "alice", Cookie: string(laptop.Cookie())})
	b := k.decide(Visit{Key: "alice", Cookie: string(phone.Cookie())})
	if a.Visitor != b.Visitor || a.Status.Ticket != laptop.Status.Ticket || b.Status.Position != 1 {
		t.Fatalf("laptop %v (ticket %d), phone %v at %d; want one place, the laptop's, at 1",
			a.Visitor, a.Status.Ticket, b.Visitor, b.Status.Position)
	}
}

// A keyed waiter's device that asks for a hand-off code without the key (logged out,
// or a route the key is not on) gets a keyed code: the key's place is not renamed,
// or every other device of the key would be told it moved.
func TestKeyedCookieMintsKeyedHandoff(t *testing.T) {
	k := newKeyedRoom(t, 1, nil)
	k.fill(t, 1)
	alice := k.decide(Visit{Key: "alice"})
	d := k.decide(Visit{Cookie: string(alice.Cookie()), HandoffNew: true})
	h, ok := k.keys.Load().OpenHandoff(d.Handoff, k.clk.Now())
	if !ok || h.ID != alice.Visitor || !h.Keyed {
		t.Fatalf("the code opens as %+v, %v; want alice's place, keyed", h, ok)
	}
	taken := k.decide(Visit{Handoff: d.Handoff})
	if taken.Visitor != alice.Visitor || taken.Status.Position != 1 {
		t.Fatalf("the code taken: %v at %d, want alice's place at 1", taken.Visitor, taken.Status.Position)
	}
	if again := k.decide(Visit{Key: "alice"}); again.Outcome != Queued || again.Visitor != alice.Visitor {
		t.Fatalf("alice's own device after the hand-off: %v as %v, want still queued as herself", again.Outcome, again.Visitor)
	}
	// The device that took the code carries a keyed cookie: another key does not get it.
	if bob := k.decide(Visit{Key: "bob", Cookie: string(taken.Cookie())}); bob.Visitor == alice.Visitor {
		t.Fatal("bob took alice's place with the cookie of the device she handed it to")
	}
}
