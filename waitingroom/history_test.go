package waitingroom

import (
	"context"
	"testing"
	"time"
)

// The room records its history as it runs: a waiter let in from the line shows in the
// minute's waits, and the admissions are counted.
func TestRoomHistory(t *testing.T) {
	tr := newTestRoom(t, 1)
	_, first := tr.visit("", "application/json")
	_, waiter := tr.visit("", "application/json")
	tr.step()
	tr.clock.Advance(30 * time.Second)
	tr.queued(waiter)
	if err := tr.h.room.RemoveVisitor(context.Background(), visitorOf(t, tr, first).String()); err != nil {
		t.Fatal(err)
	}
	tr.step()
	tr.visit(waiter, "application/json") // comes back admitted: the wait is observed
	pts := tr.h.room.History().Points
	var admissions uint64
	waits := 0
	for _, p := range pts {
		admissions += p.Admissions
		waits += p.Waits
	}
	if admissions < 1 || waits != 1 {
		t.Fatalf("history %+v: %d admissions, %d waits; want the waiter's admission and wait", pts, admissions, waits)
	}
}
