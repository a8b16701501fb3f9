package room

import (
	"context"
	"os"
	"testing"
	"time"
)

// Issue 40, item 7, its open half: a device that opened a keyed hand-off code without
// the key (a kiosk) while the key waited holds a cookie naming the key's fixed id, for
// 24 hours. Once the key's place has ended and the key queues again elsewhere, that
// cookie must not land on the new place: its socket's "leave" would remove it. The
// stores keep no start of a queued place that the cookie could be compared with (a
// waiter's ticket is not in the cookie, and changes on a no-show's return and at a
// lottery), so this needs a format change (a place stamp in the cookie, or the
// place's start kept by the store) that is not made here. An admitted session's start
// is kept, which closes the other half (keyedSessionHolds, and the test below). This
// test is kept, skipped, as the hostile case: WAITINGROOM_OPEN_ITEMS=1 runs it, and
// it fails on this code.
func TestKeyedHandoffCookieDoesNotOwnTheNextPlace(t *testing.T) {
	if os.Getenv("WAITINGROOM_OPEN_ITEMS") == "" {
		t.Skip("issue 40 item 7 is open: a keyed cookie names the key, not the place (see the comment)")
	}
	k := newKeyedRoom(t, 1, nil)
	ctx := context.Background()
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
	// Alice's place ends, and she queues again from home.
	if _, err := k.cfg.Store.Leave(ctx, laptop.Visitor); err != nil {
		t.Fatal(err)
	}
	if home := k.decide(Visit{Key: "alice"}); home.Outcome != Queued {
		t.Fatalf("alice from home: %v, want queued", home.Outcome)
	}
	if d := k.decide(Visit{Cookie: string(kiosk.Cookie())}); d.Visitor == laptop.Visitor {
		t.Fatalf("the kiosk's old cookie is %v on alice's new place: its socket's leave would remove her", d.Outcome)
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
