package waitingroom

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// Two handlers of one room on one store, with one secret and one clock, are two
// instances of a fleet: each has its own cache of confirmed sessions. A visitor revoked
// (by the upstream's header) or removed (by the admin API, through the store) on one is
// still let through by the other only until that one's throttled check, TouchEvery
// after it last confirmed the session, and never after.
func TestRevokeAndRemovalReachAnotherInstance(t *testing.T) {
	for _, how := range []string{"revoke", "removal"} {
		t.Run(how, func(t *testing.T) {
			clk := &fakeClock{now: time.Unix(1_800_000_000, 0)}
			name := t.Name() + "-" + time.Now().Format("150405.000000")
			instance := func() *testRoom {
				return newTestRoomWith(t, 1, func(h *Handler) {
					h.Name, h.Secret, h.clock = name, "a secret both instances share, 32 bytes or more", clk
				})
			}
			a, b := instance(), instance()
			_, buyer := a.visit("", "")
			_, waiter := a.visit("", "") // takes the freed slot, so the buyer cannot come back as new
			if w, _ := b.visit(buyer, ""); w.Body.String() != "upstream" {
				t.Fatalf("the admitted visitor was not let through on the other instance: %q", w.Body.String())
			}
			clk.Advance(queue.TouchEvery / 2) // b confirmed the session half a window ago
			switch how {
			case "revoke":
				a.respond = func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set(commandHeader, "revoke")
				}
				a.visit(buyer, "")
				a.respond = nil
			case "removal":
				id := visitorOf(t, a, buyer)
				if ok, err := a.h.store.Leave(context.Background(), id); err != nil || !ok {
					t.Fatalf("removing the visitor from the store: %v %v", ok, err)
				}
			}
			a.step()
			if w, _ := a.visit(waiter, ""); w.Body.String() != "upstream" {
				t.Fatalf("the waiter was not admitted to the freed slot: %q", w.Body.String())
			}
			// Within b's window the old cookie still passes there (the documented lag)...
			passedBefore := b.passed.Load()
			b.visit(buyer, "")
			lagged := b.passed.Load() - passedBefore
			// ...and once the window has passed, never again.
			clk.Advance(queue.TouchEvery / 2)
			for i := range 10 {
				before := b.passed.Load()
				w, _ := b.visit(buyer, "application/json")
				if b.passed.Load() != before {
					t.Fatalf("request %d on the other instance a whole window after the %s was let through: %q", i+1, how, w.Body.String())
				}
				clk.Advance(time.Second)
			}
			t.Logf("%s: %d request let through on the other instance within its window, none after", how, lagged)
		})
	}
}

// visitorOf reads the visitor id out of a cookie the room set.
func visitorOf(t *testing.T, tr *testRoom, cookie string) queue.VisitorID {
	t.Helper()
	tok, ok := tr.h.room.Keys().Open(cookie, tr.clock.Now())
	if !ok {
		t.Fatal("the room's own cookie does not open")
	}
	return tok.ID
}
