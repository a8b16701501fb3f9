package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// A keyed visitor (a room's `key`) has one id however many devices it comes from, and
// each device's first request is a Join of that id: the store must hold one place for
// it, whichever device asked first, and tell the others where it stands.

// joinAll joins id from n devices at once and returns their answers.
func (r room) joinAll(id queue.VisitorID, n int, now time.Time, lim queue.Limits) []queue.Status {
	r.t.Helper()
	out := make([]queue.Status, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range out {
		wg.Go(func() { out[i], errs[i] = r.s.Join(context.Background(), id, now, lim) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			r.t.Fatalf("Join: %v", err)
		}
	}
	return out
}

// The same id joined from several devices at once, behind a full room, is one place:
// one ticket, one position, one waiter counted, and exactly one of the joins is the
// one that made it.
func testSameIDFromDevicesIsOnePlace(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(1)
	holder := r.fill(t0, lim)
	before, _ := r.queue(2, t0, lim)
	id := queue.NewVisitorID()
	answers := r.joinAll(id, 8, t0.Add(time.Second), lim)
	made := 0
	for i, st := range answers {
		if st.State != queue.Queued || st.Ticket != answers[0].Ticket || st.Position != 3 {
			t.Fatalf("device %d: %+v, want queued at position 3 on one ticket with the others (%d)", i, st, answers[0].Ticket)
		}
		if !st.Known {
			made++
		}
	}
	if made != 1 {
		t.Fatalf("%d of the joins say they made the place, want exactly 1", made)
	}
	r.wantStats(queue.Stats{Active: 1, Waiting: 3, AdmittedTotal: 1})
	if late, st := r.join(t0.Add(2*time.Second), lim); st.Position != 4 || st.Known {
		t.Fatalf("a new visitor after the devices: %+v (%v), want position 4, not known", st, late)
	}

	// Its turn comes once, and a device joining then shares the admitted session.
	r.leave(holder[0])
	wantIDs(t, "admitted when the slot freed", r.step(t0.Add(3*time.Second), lim), []queue.VisitorID{before[0]})
	r.leave(before[0])
	r.leave(before[1])
	wantIDs(t, "admitted when the next slot freed", r.step(t0.Add(4*time.Second), lim), []queue.VisitorID{id})
	for i, st := range r.joinAll(id, 4, t0.Add(5*time.Second), lim) {
		if st.State != queue.Admitted || !st.Known {
			t.Fatalf("device %d after the admission: %+v, want admitted and known", i, st)
		}
	}
	r.wantStats(queue.Stats{Active: 1, Waiting: 1, AdmittedTotal: 3})
}

// Joining a known id, queued or admitted, by Join or JoinPass, changes nothing: no new
// ticket, no admission counted, no pass use spent; a fresh id is never reported known.
func testJoinKnownCountsNothing(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(1)
	active := r.fill(t0, lim)
	waiter, first := r.join(t0, lim)
	if first.Known {
		t.Fatalf("a fresh waiter's join says known: %+v", first)
	}
	before := r.stats()

	for range 3 {
		if st := r.joinID(active[0], t0.Add(time.Second), lim); st.State != queue.Admitted || !st.Known {
			t.Fatalf("an admitted visitor joining again: %+v, want admitted and known", st)
		}
		if st := r.joinID(waiter, t0.Add(time.Second), lim); st.State != queue.Queued || st.Ticket != first.Ticket || st.Position != 1 || !st.Known {
			t.Fatalf("a waiter joining again: %+v, want queued at its ticket %d, position 1, known", st, first.Ticket)
		}
	}
	r.wantStats(before)

	pass := newPass(1)
	for _, id := range []queue.VisitorID{active[0], waiter} {
		st, counted, err := r.s.JoinPass(context.Background(), id, pass, t0.Add(2*time.Second), lim)
		if err != nil {
			t.Fatalf("JoinPass: %v", err)
		}
		if !counted || !st.Known || (st.State != queue.Admitted && st.Ticket != first.Ticket) {
			t.Fatalf("JoinPass of a known visitor: %+v counted %v, want where it stands, known", st, counted)
		}
	}
	r.wantStats(before)
	if _, st, counted := r.joinPass(pass, t0.Add(3*time.Second), lim); !counted || st.Known || st.State != queue.Queued {
		t.Fatalf("a new visitor with the pass the known ones presented: %+v counted %v, want its one use", st, counted)
	}
}
