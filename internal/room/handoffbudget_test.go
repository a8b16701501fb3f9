package room

import (
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// A client that asks for hand-off codes as fast as it can (each is a QR code drawn,
// about 2 ms of CPU, against microseconds for a poll) gets handoffBurst of them at
// once and handoffsPerSecond after that, from one cookie or from many; the rest are
// told to come back (HandoffBusy) and keep their places, and the line is untouched.
func TestHandoffMintingIsBounded(t *testing.T) {
	k := newKeyedRoom(t, 1, nil)
	k.fill(t, 1)
	w := k.decide(Visit{})
	minted, busy := 0, 0
	for i := range 3 * handoffBurst {
		v := Visit{Cookie: string(w.Cookie()), HandoffNew: true}
		if i%2 == 1 {
			v = Visit{HandoffNew: true} // a new visitor each time, as a bot sends
		}
		d := k.decide(v)
		switch {
		case d.Handoff != "" && d.Outcome == HandoffCode:
			minted++
		case d.Handoff == "" && d.Outcome == HandoffBusy && d.Place == queue.Queued:
			busy++
		default:
			t.Fatalf("request %d: %v, code %q", i, d.Outcome, d.Handoff)
		}
	}
	if minted != handoffBurst || busy != 2*handoffBurst {
		t.Fatalf("%d codes and %d refusals at one instant, want %d and %d", minted, busy, handoffBurst, 2*handoffBurst)
	}
	if d := k.decide(Visit{Cookie: string(w.Cookie())}); d.Outcome != Queued || d.Status.Position != 1 {
		t.Fatalf("the waiter's poll: %v at %d, want queued at 1", d.Outcome, d.Status.Position)
	}
	k.clk.set(k.clk.Now().Add(time.Second))
	minted = 0
	for range 3 * handoffsPerSecond {
		if d := k.decide(Visit{Cookie: string(w.Cookie()), HandoffNew: true}); d.Handoff != "" {
			minted++
		}
	}
	if minted != handoffsPerSecond {
		t.Fatalf("%d codes a second later, want %d", minted, handoffsPerSecond)
	}
}
