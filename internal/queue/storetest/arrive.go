package storetest

import (
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// arriveLimits give an admitted waiter 30 seconds to arrive and keep a quiet waiter's
// place for ten minutes.
func arriveLimits(capacity int) queue.Limits {
	lim := awayLimits(capacity)
	lim.ArriveTTL = 30 * time.Second
	return lim
}

// admitHead frees the one slot of a room of capacity 1 held by holder and admits the
// head of the line at now, which must be want.
func (r room) admitHead(holder, want queue.VisitorID, now time.Time, lim queue.Limits) {
	r.t.Helper()
	r.leave(holder)
	wantIDs(r.t, "admitted when the slot freed", r.step(now, lim), []queue.VisitorID{want})
}

// A waiter admitted from the line who makes no request within ArriveTTL gives the
// slot back, and the next waiter takes it; coming back, the no-show goes first, ahead
// of those who joined meanwhile.
func testNoShowGivesSlotBack(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := arriveLimits(1)
	holder := r.fill(t0, lim)
	w, _ := r.queueShown(2, t0, lim)
	r.admitHead(holder[0], w[0], t0, lim)

	r.heartbeat(t0.Add(20*time.Second), w[1])
	if res := r.stepResult(t0.Add(29*time.Second), lim); res.NoShows != 0 || len(res.Admitted) != 0 {
		t.Fatalf("Step before arrive_ttl = %+v, want nothing", res)
	}
	res := r.stepResult(t0.Add(30*time.Second), lim)
	if res.NoShows != 1 {
		t.Fatalf("Step at arrive_ttl = %+v, want one no-show", res)
	}
	wantIDs(t, "admitted in the no-show's slot", res.Admitted, []queue.VisitorID{w[1]})
	r.wantStats(queue.Stats{Active: 1, Away: 1, AdmittedTotal: 3, NoShows: 1})
	if r.touch(w[0], t0.Add(31*time.Second)) {
		t.Fatal("the no-show's old session is still confirmed")
	}

	now := t0.Add(2 * time.Minute)
	late, lateSt := r.join(now, lim)
	back := r.status(w[0], now.Add(time.Second))
	if back.State != queue.Queued || back.Position != 1 || !back.Returned || !back.Missed {
		t.Fatalf("the no-show back: %+v, want queued at position 1, returned, missed", back)
	}
	if again := r.status(w[0], now.Add(2*time.Second)); again.Returned || again.Missed {
		t.Fatalf("a second Status right after coming back: %+v, want neither returned nor missed", again)
	}
	wantInts(t, "positions of the no-show and the later arrival", r.positions(back.Ticket, lateSt.Ticket), []int{1, 2})
	r.admitHead(w[1], w[0], now.Add(3*time.Second), lim)
	r.wantState(late, now.Add(4*time.Second), queue.Queued)
}

// Touch is the arrival: the slot is kept past ArriveTTL. Status is not (the hub and
// the page's socket ask it for a visitor who may never come).
func testArrivalKeepsSlot(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := arriveLimits(1)
	holder := r.fill(t0, lim)
	w, _ := r.queueShown(2, t0, lim)
	r.admitHead(holder[0], w[0], t0, lim)
	r.wantState(w[0], t0.Add(5*time.Second), queue.Admitted)
	if !r.touch(w[0], t0.Add(10*time.Second)) {
		t.Fatal("Touch of the admitted waiter reports it not admitted")
	}
	r.heartbeat(t0.Add(40*time.Second), w[1])
	if res := r.stepResult(t0.Add(45*time.Second), lim); res.NoShows != 0 || len(res.Admitted) != 0 {
		t.Fatalf("Step past arrive_ttl after the arrival = %+v, want nothing", res)
	}
	r.wantState(w[0], t0.Add(46*time.Second), queue.Admitted)

	// Status alone, as the push hub calls it for an admitted waiter, is no arrival.
	r.leave(w[0])
	wantIDs(t, "admitted next", r.step(t0.Add(50*time.Second), lim), []queue.VisitorID{w[1]})
	r.wantState(w[1], t0.Add(55*time.Second), queue.Admitted)
	if res := r.stepResult(t0.Add(80*time.Second), lim); res.NoShows != 1 {
		t.Fatalf("Step at arrive_ttl after a Status but no Touch = %+v, want one no-show", res)
	}
}

// A visitor admitted at join has arrived: its request is the arrival.
func testAdmittedAtJoinHasArrived(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := arriveLimits(2)
	ids := r.fill(t0, lim)
	if res := r.stepResult(t0.Add(time.Minute), lim); res.NoShows != 0 {
		t.Fatalf("Step past arrive_ttl = %+v, want no no-show among visitors admitted at join", res)
	}
	for _, id := range ids {
		r.wantState(id, t0.Add(time.Minute), queue.Admitted)
	}
}

// AdmitNow's admissions come from the line too: they must arrive.
func testAdmitNowMustArrive(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := arriveLimits(1)
	r.fill(t0, lim)
	w, _ := r.queueShown(2, t0, lim)
	res, err := r.s.AdmitNow(t.Context(), 2, t0, lim)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "admitted now", res.Admitted, w)
	r.touch(w[1], t0.Add(time.Second))
	if res := r.stepResult(t0.Add(30*time.Second), lim); res.NoShows != 1 {
		t.Fatalf("Step at arrive_ttl = %+v, want the one who did not arrive as a no-show", res)
	}
	r.wantState(w[1], t0.Add(31*time.Second), queue.Admitted)
	if st := r.status(w[0], t0.Add(32*time.Second)); !st.Missed || st.Position != 1 {
		t.Fatalf("the no-show back: %+v, want missed at position 1", st)
	}
}

// With nobody kept away (AwayTTL at or below QueueTTL) a no-show simply loses the
// place; ArriveTTL 0 sends nobody back.
func testNoShowWithoutAway(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(1)
	lim.ArriveTTL = 30 * time.Second
	holder := r.fill(t0, lim)
	w, _ := r.queueShown(2, t0, lim)
	r.admitHead(holder[0], w[0], t0, lim)
	r.heartbeat(t0.Add(20*time.Second), w[1])
	res := r.stepResult(t0.Add(30*time.Second), lim)
	if res.NoShows != 1 {
		t.Fatalf("Step at arrive_ttl = %+v, want one no-show", res)
	}
	wantIDs(t, "admitted in the no-show's slot", res.Admitted, []queue.VisitorID{w[1]})
	r.wantState(w[0], t0.Add(31*time.Second), queue.Unknown)
	r.wantStats(queue.Stats{Active: 1, AdmittedTotal: 3, NoShows: 1})

	// w[1], admitted while arrive_ttl was on, keeps the slot once it is off.
	lim.ArriveTTL = 0
	if res := r.stepResult(t0.Add(4*time.Minute), lim); res.NoShows != 0 {
		t.Fatalf("Step with arrive_ttl off = %+v, want no no-show", res)
	}
	r.wantState(w[1], t0.Add(4*time.Minute), queue.Admitted)
}

// A no-show keeps the place for AwayTTL from when it gave the slot back, then loses it.
func testNoShowPlaceExpires(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := arriveLimits(1)
	holder := r.fill(t0, lim)
	w, _ := r.queueShown(1, t0, lim)
	r.admitHead(holder[0], w[0], t0, lim)
	given := t0.Add(30 * time.Second)
	if res := r.stepResult(given, lim); res.NoShows != 1 {
		t.Fatalf("Step at arrive_ttl = %+v, want one no-show", res)
	}
	if res := r.stepResult(given.Add(lim.AwayTTL-time.Second), lim); res.Abandoned != 0 {
		t.Fatalf("Step before away_ttl = %+v, want the no-show's place kept", res)
	}
	if res := r.stepResult(given.Add(lim.AwayTTL), lim); res.Abandoned != 1 {
		t.Fatalf("Step at away_ttl = %+v, want the no-show's place dropped", res)
	}
	r.wantState(w[0], given.Add(lim.AwayTTL+time.Second), queue.Unknown)
	r.wantStats(queue.Stats{AdmittedTotal: 2, NoShows: 1})
}

// The only waiter admitted leaves the line empty; as a no-show it is queued again,
// and a newcomer who queues after it (behind a visitor admitted at join) is behind
// it.
func testNoShowIntoEmptyLine(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := arriveLimits(1)
	holder := r.fill(t0, lim)
	w, _ := r.queueShown(1, t0, lim)
	r.admitHead(holder[0], w[0], t0, lim)
	if res := r.stepResult(t0.Add(30*time.Second), lim); res.NoShows != 1 || len(res.Admitted) != 0 {
		t.Fatalf("Step at arrive_ttl = %+v, want one no-show and nobody admitted", res)
	}
	now := t0.Add(40 * time.Second)
	// The away no-show does not hold up a join into its free slot.
	if _, st := r.join(now, lim); st.State != queue.Admitted {
		t.Fatalf("a join into the freed slot: %+v, want admitted", st)
	}
	_, lateSt := r.join(now, lim)
	back := r.status(w[0], now.Add(time.Second))
	if !back.Missed || back.Position != 1 {
		t.Fatalf("the no-show back: %+v, want missed at position 1", back)
	}
	wantInts(t, "positions", r.positions(back.Ticket, lateSt.Ticket), []int{1, 2})
}

// In random mode too the no-show back goes in first.
func testNoShowFirstInRandomMode(t *testing.T, open Open) {
	for range 5 {
		r := newRoom(t, open)
		lim := arriveLimits(1)
		holder := r.fill(t0, lim)
		w, _ := r.queueShown(1, t0, lim)
		r.admitHead(holder[0], w[0], t0, lim)
		lim.Random = true
		res := r.stepResult(t0.Add(30*time.Second), lim)
		if res.NoShows != 1 {
			t.Fatalf("Step at arrive_ttl = %+v, want one no-show", res)
		}
		now := t0.Add(31 * time.Second)
		blocker := r.fill(now, lim)
		r.queueShown(20, now, lim)
		r.status(w[0], now.Add(time.Second))
		r.admitHead(blocker[0], w[0], now.Add(2*time.Second), lim)
	}
}
