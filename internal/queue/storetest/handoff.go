package storetest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// The hand-off's side of the store: Move gives a place to a fresh id in one step and
// leaves exactly one holder, and the hand-off code's nonce is used once, fleet-wide.

func (r room) move(from, to queue.VisitorID, now time.Time, lim queue.Limits) (queue.Status, bool) {
	r.t.Helper()
	st, ok, err := r.s.Move(context.Background(), from, to, now, lim)
	if err != nil {
		r.t.Fatalf("Move: %v", err)
	}
	return st, ok
}

// A waiter's place moves whole: the new id holds the same ticket at the same
// position, the old one holds nothing and reads Moved, nobody else's position and no
// counter but the hand-offs changes, and the line goes on with the new id in the old
// one's turn.
func testMoveKeepsTheWaitersPlace(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(1)
	holder := r.fill(t0, lim)
	w, tickets := r.queueShown(3, t0, lim)
	before := r.stats()
	now := t0.Add(10 * time.Second)

	to := queue.NewVisitorID()
	st, ok := r.move(w[1], to, now, lim)
	if !ok || st.State != queue.Queued || st.Ticket != tickets[1] || st.Position != 2 {
		t.Fatalf("Move = %+v, %v; want queued at ticket %d, position 2", st, ok, tickets[1])
	}
	r.wantState(w[1], now, queue.Moved)
	if got := r.status(to, now); got.State != queue.Queued || got.Ticket != tickets[1] || got.Position != 2 {
		t.Fatalf("the new holder's status = %+v, want the same ticket at position 2", got)
	}
	wantInts(t, "positions after the move", r.positions(tickets...), []int{1, 2, 3})
	after := r.stats()
	if after.Handoffs != before.Handoffs+1 {
		t.Fatalf("hand-offs %d after one move, were %d", after.Handoffs, before.Handoffs)
	}
	after.Handoffs = before.Handoffs
	if after != before {
		t.Fatalf("Stats after a move = %+v, were %+v: nobody joined or left", after, before)
	}
	if r.leave(w[1]) {
		t.Fatal("the old id left a place it had given away")
	}
	if r.touch(w[1], now) {
		t.Fatal("the old id was confirmed as admitted")
	}
	if _, ok := r.move(w[1], queue.NewVisitorID(), now, lim); ok {
		t.Fatal("the old id moved its place a second time")
	}
	r.admitHead(holder[0], w[0], now, lim)
	r.admitHead(w[0], to, now, lim)
}

// An admitted visitor's session moves: the new id is confirmed by Touch and keeps the
// slot, the old one is not and reads Moved, and the slot is counted once.
func testMoveKeepsTheSession(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(2)
	ids := r.fill(t0, lim)
	r.queue(1, t0, lim)
	now := t0.Add(time.Minute)
	to := queue.NewVisitorID()
	if st, ok := r.move(ids[0], to, now, lim); !ok || st.State != queue.Admitted {
		t.Fatalf("Move of an admitted visitor = %+v, %v; want admitted", st, ok)
	}
	if r.touch(ids[0], now) {
		t.Fatal("the old id's session is still confirmed")
	}
	r.wantState(ids[0], now, queue.Moved)
	if !r.touch(to, now) {
		t.Fatal("the new id's session is not confirmed")
	}
	r.wantState(to, now, queue.Admitted)
	if got := r.stats(); got.Active != 2 || got.Waiting != 1 || got.Handoffs != 1 {
		t.Fatalf("Stats = %+v; want 2 active, 1 waiting, 1 hand-off", got)
	}
	// The session lives on the new id's touches: the slot stays held past the old
	// id's last touch, and frees when the new one goes quiet.
	kept := now.Add(lim.SessionTTL - time.Second)
	if !r.touch(to, kept) {
		t.Fatal("the new id's session lapsed early")
	}
	r.stepResult(now.Add(lim.SessionTTL+time.Second), lim)
	if got := r.stats(); got.Active != 1 {
		t.Fatalf("%d active after the unmoved session lapsed, want the moved one alone", got.Active)
	}
	r.stepResult(kept.Add(lim.SessionTTL), lim)
	if r.touch(to, kept.Add(lim.SessionTTL)) {
		t.Fatal("the moved session outlived its session_ttl")
	}
}

// Move takes nothing from nobody: an unknown id, an id that moved already, or an
// existing id as the target moves nothing and changes nothing.
func testMoveOfNothingIsRefused(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(1)
	holder := r.fill(t0, lim)
	w, tickets := r.queueShown(2, t0, lim)
	if _, ok := r.move(queue.NewVisitorID(), queue.NewVisitorID(), t0, lim); ok {
		t.Fatal("an unknown id moved a place")
	}
	if _, ok := r.move(w[0], w[1], t0, lim); ok {
		t.Fatal("a place moved onto another waiter's id")
	}
	if _, ok := r.move(w[0], holder[0], t0, lim); ok {
		t.Fatal("a place moved onto an admitted visitor's id")
	}
	if _, ok := r.move(w[0], w[0], t0, lim); ok {
		t.Fatal("a place moved onto its own id")
	}
	wantInts(t, "positions after refused moves", r.positions(tickets...), []int{1, 2})
	r.wantState(w[0], t0, queue.Queued)
	r.wantState(holder[0], t0, queue.Admitted)
	if got := r.stats(); got.Handoffs != 0 {
		t.Fatalf("%d hand-offs counted for refused moves", got.Handoffs)
	}
	if r.status(queue.NewVisitorID(), t0).State != queue.Unknown {
		t.Fatal("an id never seen reads as something")
	}
}

// An away waiter's place moves too, and the new device, being heard, brings it back.
// A waiter admitted from the line who has not arrived yet arrives on the new id.
func testMoveKeepsAwayAndArrival(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := arriveLimits(1)
	holder := r.fill(t0, lim)
	w, tickets := r.queueShown(2, t0, lim)
	quiet := t0.Add(lim.QueueTTL + time.Second)
	r.heartbeat(quiet.Add(-time.Second), w[1])
	r.stepResult(quiet, lim)
	if got := r.positions(tickets...); got[0] != 0 {
		t.Fatalf("positions %v: the quiet waiter is not away", got)
	}
	to := queue.NewVisitorID()
	st, ok := r.move(w[0], to, quiet.Add(time.Second), lim)
	if !ok || st.State != queue.Queued || st.Position != 1 || !st.Returned {
		t.Fatalf("Move of an away waiter = %+v, %v; want back at position 1", st, ok)
	}

	at := quiet.Add(2 * time.Second)
	r.admitHead(holder[0], to, at, lim)
	mover := queue.NewVisitorID()
	if _, ok := r.move(to, mover, at.Add(time.Second), lim); !ok {
		t.Fatal("a visitor admitted from the line, not arrived yet, could not move")
	}
	if !r.touch(mover, at.Add(2*time.Second)) {
		t.Fatal("the new id could not arrive")
	}
	if res := r.stepResult(at.Add(lim.ArriveTTL+time.Second), lim); res.NoShows != 0 {
		t.Fatalf("Step = %+v: the visitor who arrived on the new id counted as a no-show", res)
	}
	r.wantState(mover, at.Add(lim.ArriveTTL+time.Second), queue.Admitted)
}

// The hand-off as the room does it, from several instances at once on one place:
// each tries the code's once-only key and then the move. Exactly one gets the place,
// whichever instance it asks, and the place has exactly one holder after.
func RunHandoffOnce(t *testing.T, open OpenShared) {
	const instances, tries = 3, 60
	stores := open(t, instances)
	lim := limits(1)
	ctx := context.Background()
	if _, err := stores[0].Join(ctx, queue.NewVisitorID(), t0, lim); err != nil {
		t.Fatal(err)
	}
	from := queue.NewVisitorID()
	st, err := stores[0].Join(ctx, from, t0, lim)
	if err != nil || st.State != queue.Queued {
		t.Fatalf("Join = %+v, %v; want queued", st, err)
	}
	key := "handoff:" + queue.NewVisitorID().String()
	until := time.Now().Add(time.Minute) // Once reads the store's own clock
	var wg sync.WaitGroup
	var used, moved atomic.Int64
	tos := make([]queue.VisitorID, tries)
	start := make(chan struct{})
	for i := range tries {
		tos[i] = queue.NewVisitorID()
		wg.Go(func() {
			<-start
			s := stores[i%instances]
			first, err := s.Once(ctx, key, until)
			if err != nil {
				t.Errorf("Once: %v", err)
				return
			}
			if !first {
				return
			}
			used.Add(1)
			got, ok, err := s.Move(ctx, from, tos[i], t0, lim)
			if err != nil || !ok || got.Ticket != st.Ticket {
				t.Errorf("Move after the first use = %+v, %v, %v; want the ticket %d", got, ok, err, st.Ticket)
				return
			}
			moved.Add(1)
		})
	}
	close(start)
	wg.Wait()
	if used.Load() != 1 || moved.Load() != 1 {
		t.Fatalf("the code was used %d times and moved the place %d times; want once", used.Load(), moved.Load())
	}
	holders := 0
	for _, id := range append(tos, from) {
		got, err := stores[1].Status(ctx, id, t0)
		if err != nil {
			t.Fatal(err)
		}
		if got.State == queue.Queued {
			holders++
			if got.Ticket != st.Ticket {
				t.Fatalf("a holder of ticket %d, want %d", got.Ticket, st.Ticket)
			}
		}
	}
	if holders != 1 {
		t.Fatalf("%d holders of the place after the hand-off, want 1", holders)
	}
	if got, _ := stores[2].Stats(ctx); got.Waiting != 1 || got.Handoffs != 1 {
		t.Fatalf("Stats = %+v; want 1 waiting, 1 hand-off", got)
	}
}

// Reset empties the room of the places that moved too: an id that gave its place away
// reads Unknown afterwards (its device is a new visitor like anyone's), whether the
// place was a waiter's or a session, and a move after the reset marks its id anew.
func testResetForgetsMoves(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(1)
	holder := r.fill(t0, lim)
	w, _ := r.queueShown(1, t0, lim)
	now := t0.Add(time.Second)
	for _, from := range []queue.VisitorID{holder[0], w[0]} {
		if _, ok := r.move(from, queue.NewVisitorID(), now, lim); !ok {
			t.Fatalf("moving %s refused", from)
		}
		r.wantState(from, now, queue.Moved)
	}
	if err := r.s.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.wantState(holder[0], now, queue.Unknown)
	r.wantState(w[0], now, queue.Unknown)

	again := r.fill(now, lim)
	if _, ok := r.move(again[0], queue.NewVisitorID(), now, lim); !ok {
		t.Fatal("a move after the reset refused")
	}
	r.wantState(again[0], now, queue.Moved)
}
