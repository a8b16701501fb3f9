package room

import (
	"context"
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// The waiting page's WebSocket is the room's, never the shop's: however its visitor
// comes to be admitted, the socket is told so rather than handed on to a shop that
// does not speak it. A page's socket can find the room open when its place was lost
// (the room was reset, the store flushed), when it is a stale tab of a visitor let in
// before, or when it is the first the room hears of its visitor.
func TestEveryAdmittedSocketIsTold(t *testing.T) {
	ctx := context.Background()
	decide := func(rm *Room, v Visit) Decision {
		var d Decision
		rm.Decide(ctx, &v, &d)
		return d
	}
	for _, tc := range []struct {
		name string
		// cookie returns the cookie the page opens its socket with.
		cookie func(t *testing.T, rm *Room, clk *testClock) string
	}{
		{"a waiter whose place was lost", func(t *testing.T, rm *Room, clk *testClock) string {
			decide(rm, Visit{Now: clk.Now()}) // fills the room
			d := decide(rm, Visit{Now: clk.Now()})
			if d.Outcome != Queued {
				t.Fatalf("the second visitor of capacity 1: outcome %v, want queued", d.Outcome)
			}
			if err := rm.Reset(ctx); err != nil {
				t.Fatal(err)
			}
			return string(d.Cookie())
		}},
		{"a visitor let in before", func(t *testing.T, rm *Room, clk *testClock) string {
			d := decide(rm, Visit{Now: clk.Now()})
			if d.Outcome != Admitted {
				t.Fatalf("the first visitor: outcome %v, want admitted", d.Outcome)
			}
			return string(d.Cookie())
		}},
		{"a visitor the room has not seen", func(*testing.T, *Room, *testClock) string { return "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, socket := range []bool{true, false} {
				rm, clk := newTestRoom(t, 1, nil)
				cookie := tc.cookie(t, rm, clk)
				d := decide(rm, Visit{Now: clk.Now(), Cookie: cookie, Socket: socket})
				if want := map[bool]Outcome{true: TellAdmitted, false: Admitted}[socket]; d.Outcome != want || d.Place != queue.Admitted {
					t.Errorf("socket %v: outcome %v (place %v), want %v", socket, d.Outcome, d.Place, want)
				}
			}
		})
	}
}
