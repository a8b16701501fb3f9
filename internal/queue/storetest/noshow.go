package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// A no-show keeps its turn once: admitted again from the place it kept and missing
// that turn too, it loses the place (Unknown), and is counted a no-show each time.
// One who arrives on the second turn keeps its slot as anyone does.
func testNoShowKeptOnce(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := arriveLimits(1)
	holder := r.fill(t0, lim)
	w, _ := r.queueShown(2, t0, lim)
	r.admitHead(holder[0], w[0], t0, lim)

	// The first miss: the slot goes to w[1], w[0] keeps its turn.
	r.heartbeat(t0.Add(20*time.Second), w[1])
	wantIDs(t, "admitted at the first miss", r.step(t0.Add(30*time.Second), lim), []queue.VisitorID{w[1]})
	if back := r.status(w[0], t0.Add(40*time.Second)); back.Position != 1 || !back.Missed {
		t.Fatalf("the no-show back: %+v, want missed at position 1", back)
	}
	r.admitHead(w[1], w[0], t0.Add(45*time.Second), lim)

	// The second miss: the place is gone, and nobody is away.
	if res := r.stepResult(t0.Add(75*time.Second), lim); res.NoShows != 1 || len(res.Admitted) != 0 {
		t.Fatalf("Step at the second miss = %+v, want one no-show and nobody admitted", res)
	}
	r.wantState(w[0], t0.Add(76*time.Second), queue.Unknown)
	r.wantStats(queue.Stats{AdmittedTotal: 4, NoShows: 2})

	// One kept once who arrives on its second turn is an ordinary visitor let in.
	r = newRoom(t, open)
	holder = r.fill(t0, lim)
	w, _ = r.queueShown(1, t0, lim)
	r.admitHead(holder[0], w[0], t0, lim)
	r.stepResult(t0.Add(30*time.Second), lim)
	r.status(w[0], t0.Add(40*time.Second))
	wantIDs(t, "the no-show back let in", r.step(t0.Add(41*time.Second), lim), []queue.VisitorID{w[0]})
	if !r.touch(w[0], t0.Add(45*time.Second)) {
		t.Fatal("the no-show's second turn is not confirmed by its arrival")
	}
	if res := r.stepResult(t0.Add(2*time.Minute), lim); res.NoShows != 0 {
		t.Fatalf("Step after the arrival = %+v, want no no-show", res)
	}
	r.wantState(w[0], t0.Add(2*time.Minute), queue.Admitted)
}

// The second miss loses the place although the line emptied between the turns (the
// no-show was the last waiter let in, and a newcomer started the line again): the
// mark is the admission's, not the line's.
func testNoShowKeptOnceAcrossAnEmptyLine(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := arriveLimits(1)
	holder := r.fill(t0, lim)
	w, _ := r.queueShown(1, t0, lim)
	r.admitHead(holder[0], w[0], t0, lim)
	if res := r.stepResult(t0.Add(30*time.Second), lim); res.NoShows != 1 {
		t.Fatalf("Step at the first miss = %+v, want one no-show", res)
	}
	r.status(w[0], t0.Add(31*time.Second))
	wantIDs(t, "the no-show back let in, the line empty", r.step(t0.Add(32*time.Second), lim), []queue.VisitorID{w[0]})
	late, _ := r.queueShown(1, t0.Add(40*time.Second), lim)
	res := r.stepResult(t0.Add(62*time.Second), lim)
	if res.NoShows != 1 {
		t.Fatalf("Step at the second miss = %+v, want one no-show", res)
	}
	wantIDs(t, "admitted at the second miss", res.Admitted, late)
	r.wantState(w[0], t0.Add(63*time.Second), queue.Unknown)
	r.wantStats(queue.Stats{Active: 1, AdmittedTotal: 4, NoShows: 2})
}

// No-shows cannot hold the head of the line. Bot places are let in and never arrive
// (no Touch). Those whose clients only ever reopen the waiting socket (a Listen
// before every step) miss their turn once and are never back: a socket alone is not
// coming back. Those that also make a page request before every step (a Status) come
// back first, miss that turn too and lose the place; their next request is a new
// visitor, at the end. A real waiter behind any number of them (heard before every
// step, arriving when let in) is let in after at most one miss of each socket bot,
// two of each page bot, and before any place that joined after it. The steps are
// arrive_ttl apart, so each frees the slots of the previous one's admissions.
func testNoShowsCannotHoldTheHead(t *testing.T, open Open) {
	for _, kind := range []struct {
		name  string
		turns int
		hear  func(room, queue.VisitorID, time.Time) queue.Status
	}{
		{"socket", 1, room.listen},
		{"page", 2, room.status},
	} {
		for _, capacity := range []int{1, 3} {
			for _, bots := range []int{1, 2, 6, 20} {
				t.Run(fmt.Sprintf("%s bots, capacity %d, %d bots", kind.name, capacity, bots), func(t *testing.T) {
					noShowsBehind(t, open, capacity, bots, kind.turns, kind.hear)
				})
			}
		}
	}
}

// noShowsBehind is one sale of testNoShowsCannotHoldTheHead: bots places heard by
// hear before every step, none let in more than most times.
func noShowsBehind(t *testing.T, open Open, capacity, bots, most int, hear func(room, queue.VisitorID, time.Time) queue.Status) {
	r := newRoom(t, open)
	lim := arriveLimits(capacity)
	holders := r.fill(t0, lim)
	places, _ := r.queueShown(bots, t0, lim) // one GET each, its page answered
	real, _ := r.queueShown(1, t0, lim)
	waiter := real[0]
	for _, h := range holders {
		r.leave(h)
	}
	turns := map[queue.VisitorID]int{}       // admissions of each bot place
	joinedLate := map[queue.VisitorID]bool{} // the places bots took after the waiter
	noShows := 0
	now := t0
	// A hang guard, not the bound: the bound is asserted below.
	for step := 0; ; step++ {
		if step > 4*bots+10 {
			t.Fatalf("the waiter is not let in after %d steps and %d no-shows of %d bot places", step, noShows, bots)
		}
		for i, id := range places {
			if st := hear(r, id, now); st.State == queue.Unknown {
				places[i], _ = r.join(now, lim) // its socket: a new visitor
				r.heartbeat(now, places[i])
				joinedLate[places[i]] = true
			}
		}
		r.status(waiter, now)
		res := r.stepResult(now, lim)
		noShows += res.NoShows
		in := false
		for _, id := range res.Admitted {
			if id == waiter {
				in = true
				continue
			}
			if joinedLate[id] && !in {
				t.Fatalf("step %d: a bot place that joined after the waiter is let in before it", step)
			}
			if turns[id]++; turns[id] > most {
				t.Fatalf("step %d: a bot place is let in %d times, want at most %d", step, turns[id], most)
			}
		}
		if in {
			if noShows > most*bots {
				t.Fatalf("the waiter is let in after %d no-shows, want at most %d (%d per bot place)", noShows, most*bots, most)
			}
			if !r.touch(waiter, now.Add(time.Second)) {
				t.Fatal("the waiter let in is not confirmed by its arrival")
			}
			return
		}
		now = now.Add(lim.ArriveTTL)
	}
}

// A socket alone is not coming back: a no-show queued again is neither brought back
// nor heard from by Listen, Heartbeat or a Holder's Hold, so it is not let in into a
// free slot; a page request (Status) brings it back, first, and it is let in.
func testSocketAloneIsNotComingBack(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := arriveLimits(1)
	holder := r.fill(t0, lim)
	w, tk := r.queueShown(1, t0, lim)
	r.admitHead(holder[0], w[0], t0, lim)
	if res := r.stepResult(t0.Add(30*time.Second), lim); res.NoShows != 1 {
		t.Fatalf("Step at arrive_ttl = %+v, want one no-show", res)
	}
	now := t0.Add(31 * time.Second)
	late, lateSt := r.join(now, lim) // into the free slot: nobody present waits
	if lateSt.State != queue.Admitted {
		t.Fatalf("a join into the freed slot: %+v, want admitted", lateSt)
	}
	r.leave(late)

	st := r.listen(w[0], now)
	if st.State != queue.Queued || st.Position != 0 || st.Returned || !st.Missed {
		t.Fatalf("the socket of the no-show: %+v, want queued at position 0, missed, not returned", st)
	}
	r.heartbeat(now, w[0])
	if h, ok := r.s.(queue.Holder); ok {
		if err := h.Hold(t.Context(), []queue.VisitorID{w[0]}, now); err != nil {
			t.Fatal(err)
		}
	}
	if res := r.stepResult(now.Add(time.Second), lim); len(res.Admitted) != 0 {
		t.Fatalf("Step after the socket's calls = %+v, want nobody admitted", res)
	}
	r.wantStats(queue.Stats{Away: 1, AdmittedTotal: 3, NoShows: 1})
	wantInts(t, "the no-show's position while only its socket is heard", r.positions(tk[0]), []int{0})
	if st := r.listen(w[0], now.Add(2*time.Second)); st.Position != 0 {
		t.Fatalf("the socket of the no-show again: %+v, want still position 0", st)
	}

	// A page request brings it back, and it goes in; after that its socket is an
	// ordinary waiter's.
	back := r.status(w[0], now.Add(3*time.Second))
	if back.State != queue.Queued || back.Position != 1 || !back.Returned || !back.Missed {
		t.Fatalf("the no-show's page request: %+v, want queued at position 1, returned, missed", back)
	}
	if st := r.listen(w[0], now.Add(4*time.Second)); st.Position != 1 || st.Returned {
		t.Fatalf("its socket once back: %+v, want position 1", st)
	}
	wantIDs(t, "admitted once back", r.step(now.Add(5*time.Second), lim), w)
}
