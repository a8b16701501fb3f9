package waitingroom

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
)

// A join's answer shows the room its own decision was made in, not the room loop's last
// tick: the visitor admitted a moment ago is in active, and this waiter in waiting.
func TestJoinAnswerShowsWhatTheJoinSaw(t *testing.T) {
	tr := newTestRoom(t, 1)
	tr.step() // the loop's figures: an empty room
	if w, _ := tr.visit("", "application/json"); w.Body.String() != "upstream" {
		t.Fatalf("the first visitor was not admitted: %q", w.Body.String())
	}
	w, _ := tr.visit("", "application/json")
	var v page.View
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		t.Fatalf("%q: %v", w.Body.String(), err)
	}
	if v.Status != "queued" || v.Active != 1 || v.Capacity != 1 || v.Waiting != 1 || v.Position != 1 {
		t.Fatalf("the join's answer reads %s, want queued at 1 of 1 waiting with active 1 of 1", w.Body.String())
	}
}

// A waiter quiet for longer than queue_ttl keeps the place for away_ttl: a waiter who
// came later is not put ahead, the answer that finds them says they are back, and the
// page is told how long a place is kept.
func TestQuietWaiterKeepsThePlace(t *testing.T) {
	// queue_ttl 30s, away_ttl by default 10m; the only slot stays taken.
	tr := newTestRoomWith(t, 1, func(h *Handler) { h.SessionTTL = caddy.Duration(time.Hour) })
	tr.visit("", "")
	_, b := tr.visit("", "application/json")
	_, c := tr.visit("", "application/json")
	tr.queued(b)  // b's page answered once: a real browser's does (a poll or its socket)
	for range 4 { // c keeps polling, b has gone quiet
		tr.clock.Advance(20 * time.Second)
		tr.queued(c)
		tr.step()
	}
	if st := tr.h.room.Stats(); st.Waiting != 1 || st.Away != 1 {
		t.Fatalf("after 80 s of b's silence the room counts %+v, want 1 waiting and 1 away", *st)
	}
	if v := tr.queued(c); v.Position != 1 || v.Waiting != 1 {
		t.Fatalf("c while b is away: position %d of %d waiting, want 1 of 1", v.Position, v.Waiting)
	}
	back := tr.queued(b)
	if back.Position != 1 || !back.Returned || back.AwayTTLSeconds != 600 {
		t.Fatalf("b back after 80 s: %+v, want position 1, returned, away_ttl_seconds 600", back)
	}
	if v := tr.queued(c); v.Position != 2 {
		t.Fatalf("c once b is back: position %d, want 2 (b came first)", v.Position)
	}
	if again := tr.queued(b); again.Returned {
		t.Fatalf("b's next answer says returned again: %+v", again)
	}
}

// away_ttl 0 keeps the old rule: the place is gone at queue_ttl.
func TestAwayTTLZeroLosesThePlaceAtQueueTTL(t *testing.T) {
	tr := newTestRoomWith(t, 1, func(h *Handler) {
		h.SessionTTL, h.AwayTTL = caddy.Duration(time.Hour), new(caddy.Duration)
	})
	tr.visit("", "")
	_, b := tr.visit("", "application/json")
	_, c := tr.visit("", "application/json")
	for range 4 {
		tr.clock.Advance(20 * time.Second)
		tr.queued(c)
		tr.step()
	}
	v := tr.queued(b)
	if v.Position != 2 || v.Returned || v.AwayTTLSeconds != 0 {
		t.Fatalf("b after 80 s of silence with away_ttl 0: %+v, want a new waiter at position 2", v)
	}
}
