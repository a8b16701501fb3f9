package storetest

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// awayLimits keep a quiet waiter's place for ten minutes; present means heard from
// within the last minute.
func awayLimits(capacity int) queue.Limits {
	lim := limits(capacity)
	lim.AwayTTL = 10 * time.Minute
	return lim
}

// A waiter not heard from for QueueTTL is away: not in Waiting, not in anyone's
// position, not in its own (Positions says 0, so the hub asks Status).
func testAwayIsNotCounted(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := awayLimits(1)
	r.fill(t0, lim)
	w, tk := r.queueShown(3, t0, lim)
	later := t0.Add(50 * time.Second)
	r.heartbeat(later, w[0], w[2])
	res := r.stepResult(t0.Add(61*time.Second), lim) // w[1] has been quiet for 61 s
	if res.Abandoned != 0 || len(res.Admitted) != 0 {
		t.Fatalf("Step = %+v, want nobody dropped (w[1] is away, not gone) and nobody admitted", res)
	}
	r.wantStats(queue.Stats{Active: 1, Waiting: 2, Away: 1, AdmittedTotal: 1})
	wantInts(t, "positions with the second waiter away", r.positions(tk...), []int{1, 0, 2})
	if _, st := r.join(t0.Add(62*time.Second), lim); st.Position != 3 || st.Waiting != 3 {
		t.Fatalf("a new arrival behind one away waiter: %+v, want position 3 of 3 waiting", st)
	}
}

// Coming back before the line reached the ticket: the same place in arrival order.
func testReturnBeforeTurn(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := awayLimits(1)
	r.fill(t0, lim)
	w, tk := r.queueShown(3, t0, lim)
	r.heartbeat(t0.Add(50*time.Second), w[0], w[2])
	r.step(t0.Add(61*time.Second), lim)
	back := r.status(w[1], t0.Add(5*time.Minute))
	if back.State != queue.Queued || back.Ticket != tk[1] || back.Position != 2 || !back.Returned {
		t.Fatalf("the middle waiter back after 5 minutes: %+v, want queued, ticket %d, position 2, returned", back, tk[1])
	}
	if again := r.status(w[1], t0.Add(5*time.Minute)); again.Returned {
		t.Fatalf("a second Status right after coming back says returned again: %+v", again)
	}
	wantInts(t, "positions once back", r.positions(tk...), []int{1, 2, 3})
	r.wantStats(queue.Stats{Active: 1, Waiting: 3, AdmittedTotal: 1})
}

// Coming back after the line passed the ticket: first, ahead of everyone there now,
// several returners in ticket order; admitted at the next free slot, capacity holding.
func testReturnAfterTurnGoesFirst(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := awayLimits(1)
	holder := r.fill(t0, lim)
	w, tk := r.queueShown(5, t0, lim)
	// w[0] and w[1] go quiet; the others keep their sockets.
	for s := 30 * time.Second; s <= 3*time.Minute; s += 30 * time.Second {
		r.heartbeat(t0.Add(s), w[2], w[3], w[4])
	}
	now := t0.Add(90 * time.Second)
	r.step(now, lim)
	r.wantStats(queue.Stats{Active: 1, Waiting: 3, Away: 2, AdmittedTotal: 1})
	r.leave(holder[0])
	wantIDs(t, "admitted past the away waiters", r.step(now, lim), []queue.VisitorID{w[2]})

	// Back in the opposite order of their tickets: the order among them is still theirs.
	if st := r.status(w[1], now.Add(time.Minute)); st.Position != 1 || !st.Returned {
		t.Fatalf("the second away waiter back after its turn: %+v, want position 1", st)
	}
	if st := r.status(w[0], now.Add(time.Minute)); st.Position != 1 || !st.Returned {
		t.Fatalf("the first away waiter back after its turn: %+v, want position 1", st)
	}
	wantInts(t, "positions with two returners ahead", r.positions(tk...), []int{1, 2, 0, 3, 4})
	if got := r.step(now.Add(time.Minute), lim); len(got) != 0 {
		t.Fatalf("Step with the room full admitted %v", got)
	}
	r.leave(w[2])
	wantIDs(t, "the next free slot", r.step(now.Add(time.Minute), lim), []queue.VisitorID{w[0]})
	r.leave(w[0])
	wantIDs(t, "the one after", r.step(now.Add(time.Minute), lim), []queue.VisitorID{w[1]})
	r.wantStats(queue.Stats{Active: 1, Waiting: 2, AdmittedTotal: 4})
}

// A returner is admitted at once when a slot is free at the step after its return.
func testReturnerTakesAFreeSlot(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := awayLimits(2)
	holders := r.fill(t0, lim)
	w, _ := r.queueShown(1, t0, lim)
	r.step(t0.Add(2*time.Minute), lim) // w[0] is away
	r.leave(holders[0])
	if got := r.step(t0.Add(2*time.Minute), lim); len(got) != 0 {
		t.Fatalf("Step admitted %v, an away waiter is never admitted", got)
	}
	r.status(w[0], t0.Add(3*time.Minute))
	wantIDs(t, "the free slot", r.step(t0.Add(3*time.Minute), lim), []queue.VisitorID{w[0]})
}

// After AwayTTL of silence the place is gone; a Status in time brings the waiter back.
func testAwayExpires(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := awayLimits(1)
	lim.SessionTTL = time.Hour
	r.fill(t0, lim)
	w, _ := r.queueShown(2, t0, lim)
	r.step(t0.Add(2*time.Minute), lim)
	r.status(w[1], t0.Add(9*time.Minute)) // back in time, then quiet again
	if res := r.stepResult(t0.Add(10*time.Minute), lim); res.Abandoned != 1 {
		t.Fatalf("Step at AwayTTL dropped %d places, want 1", res.Abandoned)
	}
	r.wantState(w[0], t0.Add(10*time.Minute), queue.Unknown)
	if res := r.stepResult(t0.Add(19*time.Minute-time.Second), lim); res.Abandoned != 0 {
		t.Fatalf("Step before the returner's AwayTTL dropped %d places, want 0", res.Abandoned)
	}
	if res := r.stepResult(t0.Add(19*time.Minute), lim); res.Abandoned != 1 {
		t.Fatalf("Step at the returner's AwayTTL dropped %d places, want 1", res.Abandoned)
	}
	r.wantState(w[1], t0.Add(19*time.Minute), queue.Unknown)
	r.wantStats(queue.Stats{Active: 1, AdmittedTotal: 1})
}

// Away waiters never hold up a new arrival: with only away waiters queued and a slot
// free, a join is admitted at once.
func testAwayDoNotHoldUpJoins(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := awayLimits(1)
	holder := r.fill(t0, lim)
	r.queueShown(3, t0, lim)
	r.step(t0.Add(2*time.Minute), lim)
	r.leave(holder[0])
	if _, st := r.join(t0.Add(2*time.Minute), lim); st.State != queue.Admitted {
		t.Fatalf("a join with only away waiters queued and a slot free: %v, want admitted", st.State)
	}
	r.wantStats(queue.Stats{Active: 1, Away: 3, AdmittedTotal: 2})
}

// AdmitNow and the random draw skip away waiters too.
func testAwaySkippedByAdmitNowAndDraw(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := awayLimits(1)
	r.fill(t0, lim)
	w, _ := r.queueShown(6, t0, lim)
	present := []queue.VisitorID{w[1], w[3], w[5]}
	r.heartbeat(t0.Add(50*time.Second), present...)
	r.step(t0.Add(61*time.Second), lim)
	res, err := r.s.AdmitNow(t.Context(), 2, t0.Add(61*time.Second), lim)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "AdmitNow(2)", res.Admitted, []queue.VisitorID{w[1], w[3]})

	random := lim
	random.Random, random.Capacity = true, 100
	wantIDs(t, "a random draw with one present waiter", r.step(t0.Add(61*time.Second), random), []queue.VisitorID{w[5]})
	r.wantStats(queue.Stats{Active: 4, Away: 3, AdmittedTotal: 4})
}

// With AwayTTL at or below QueueTTL nobody is ever away: the place is lost at QueueTTL.
func testNoAwayWithoutAwayTTL(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(1)
	lim.AwayTTL = lim.QueueTTL / 2
	r.fill(t0, lim)
	w, _ := r.queueShown(2, t0, lim)
	if res := r.stepResult(t0.Add(lim.QueueTTL), lim); res.Abandoned != 2 {
		t.Fatalf("Step at QueueTTL dropped %d, want both waiters", res.Abandoned)
	}
	r.wantState(w[0], t0.Add(lim.QueueTTL), queue.Unknown)
	r.wantStats(queue.Stats{Active: 1, AdmittedTotal: 1})
}

// A lottery shuffles the away waiters with the present ones: the drawn tickets are the
// order a returner comes back to, and an away waiter keeps being away under its new one.
func testShuffleKeepsAway(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := awayLimits(1)
	r.fill(t0, lim)
	w, _ := r.queueShown(40, t0, lim)
	away := map[queue.VisitorID]bool{}
	var present []queue.VisitorID
	for i, id := range w {
		if i%3 == 0 {
			away[id] = true
		} else {
			present = append(present, id)
		}
	}
	now := t0.Add(61 * time.Second)
	r.heartbeat(t0.Add(50*time.Second), present...)
	r.step(now, lim)
	if ok, err := r.s.Shuffle(t.Context(), "draw"); err != nil || !ok {
		t.Fatalf("Shuffle = %v, %v", ok, err)
	}
	r.wantStats(queue.Stats{Active: 1, Waiting: len(present), Away: len(away), AdmittedTotal: 1})
	// Present waiters' positions are 1..n in their new ticket order; away waiters have none.
	tickets := map[uint64]queue.VisitorID{}
	for _, id := range w {
		if away[id] {
			continue
		}
		st := r.status(id, now)
		if st.Returned {
			t.Fatalf("a present waiter is reported as returned after the draw: %+v", st)
		}
		tickets[st.Ticket] = id
	}
	order := sortedKeys(tickets)
	wantInts(t, "positions after the draw", r.positions(order...), seq(len(order)))
	// Every away waiter comes back under its drawn ticket, in its place among them.
	for id := range away {
		st := r.status(id, now)
		if !st.Returned {
			t.Fatalf("an away waiter back after the draw: %+v, want returned", st)
		}
		tickets[st.Ticket] = id
	}
	if len(tickets) != len(w) {
		t.Fatalf("%d distinct tickets after the draw, want %d", len(tickets), len(w))
	}
	order = sortedKeys(tickets)
	wantInts(t, "positions once all are back", r.positions(order...), seq(len(order)))
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i + 1
	}
	return s
}

// testAwayMatchesModel drives a room through random rounds of arrivals, silences,
// returns, departures, steps and forced admissions, with the clock moving, and checks
// every position, Stats and each admission against a brute-force model of the rules.
func testAwayMatchesModel(t *testing.T, open Open) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 16))
	r := newRoom(t, open)
	lim := awayLimits(4)
	lim.SessionTTL = time.Hour

	type waiter struct {
		id    queue.VisitorID
		heard time.Time
		away  bool
		shown bool // heard from since joining
	}
	queued := map[uint64]*waiter{} // ticket -> waiter: the model
	byID := map[queue.VisitorID]uint64{}
	var active []queue.VisitorID
	var issued []uint64
	now := t0
	present := func() []uint64 {
		var p []uint64
		for _, tk := range slices.Sorted(maps.Keys(queued)) {
			if !queued[tk].away {
				p = append(p, tk)
			}
		}
		return p
	}
	// sweep is what Step does to the waiters first: away at QueueTTL, gone at AwayTTL;
	// one never heard from since joining is gone at QueueTTL.
	sweep := func() {
		for tk, w := range queued {
			switch {
			case !w.heard.Add(lim.AwayTTL).After(now),
				!w.shown && !w.heard.Add(lim.QueueTTL).After(now):
				delete(queued, tk)
				delete(byID, w.id)
			case !w.heard.Add(lim.QueueTTL).After(now):
				w.away = true
			}
		}
	}
	wantAdmitted := func(round int, what string, got []queue.VisitorID) {
		t.Helper()
		p := present()
		if len(got) > len(p) {
			t.Fatalf("round %d: %s admitted %d, the model has %d present", round, what, len(got), len(p))
		}
		for i, id := range got {
			if tk, ok := byID[id]; !ok || tk != p[i] {
				t.Fatalf("round %d: %s admitted %s (ticket %d), the model's present head is ticket %d",
					round, what, id, tk, p[i])
			}
			delete(queued, p[i])
			delete(byID, id)
		}
		active = append(active, got...)
	}

	for round := range 200 {
		now = now.Add(time.Duration(rng.IntN(40)) * time.Second)
		for range rng.IntN(5) {
			id, st := r.join(now, lim)
			switch st.State {
			case queue.Queued:
				queued[st.Ticket] = &waiter{id: id, heard: now}
				byID[id] = st.Ticket
				issued = append(issued, st.Ticket)
				if want := len(present()); st.Position != want {
					t.Fatalf("round %d: a join's position = %d, the model has %d present", round, st.Position, want)
				}
			case queue.Admitted:
				if len(present()) != 0 {
					t.Fatalf("round %d: a join was admitted past %d present waiters", round, len(present()))
				}
				active = append(active, id)
			}
		}
		// Some waiters are heard from (a poll, a socket): the away ones come back.
		var beats []queue.VisitorID
		for _, tk := range slices.Sorted(maps.Keys(queued)) {
			if rng.IntN(3) == 0 {
				beats = append(beats, queued[tk].id)
			}
		}
		if len(beats) > 0 && rng.IntN(2) == 0 {
			r.heartbeat(now, beats...)
		} else {
			for _, id := range beats {
				w := queued[byID[id]]
				st := r.status(id, now)
				if st.State != queue.Queued || st.Ticket != byID[id] || st.Returned != w.away {
					t.Fatalf("round %d: Status of ticket %d (model: away %v) = %+v", round, byID[id], w.away, st)
				}
			}
		}
		for _, id := range beats {
			w := queued[byID[id]]
			w.heard, w.away, w.shown = now, false, true
		}
		if rng.IntN(4) == 0 && len(queued) > 0 { // a departure from anywhere
			tks := slices.Sorted(maps.Keys(queued))
			tk := tks[rng.IntN(len(tks))]
			if !r.leave(queued[tk].id) {
				t.Fatalf("round %d: Leave of ticket %d reported false", round, tk)
			}
			delete(byID, queued[tk].id)
			delete(queued, tk)
		}
		if rng.IntN(2) == 0 && len(active) > 0 { // slots free
			n := 1 + rng.IntN(len(active))
			for _, id := range active[:n] {
				r.leave(id)
			}
			active = active[n:]
		}
		switch rng.IntN(4) {
		case 0, 1, 2:
			sweep()
			got := r.step(now, lim)
			if want := max(min(lim.Capacity-len(active), len(present())), 0); len(got) != want {
				t.Fatalf("round %d: Step admitted %d, the model says %d", round, len(got), want)
			}
			wantAdmitted(round, "Step", got)
		case 3:
			sweep()
			res, err := r.s.AdmitNow(t.Context(), 1, now, lim)
			if err != nil {
				t.Fatal(err)
			}
			wantAdmitted(round, "AdmitNow(1)", res.Admitted)
		}

		asked := append(slices.Clone(issued), 0, 1<<40)
		got := r.positions(asked...)
		p := present()
		for i, tk := range asked {
			want := 0
			if w, ok := queued[tk]; ok && !w.away {
				want, _ = slices.BinarySearch(p, tk)
				want++
			}
			if got[i] != want {
				t.Fatalf("round %d: position of ticket %d = %d, the model says %d", round, tk, got[i], want)
			}
		}
		st := r.stats()
		if st.Active != len(active) || st.Waiting != len(p) || st.Away != len(queued)-len(p) {
			t.Fatalf("round %d: Stats = %+v, the model has %d active, %d present, %d away",
				round, st, len(active), len(p), len(queued)-len(p))
		}
	}
}

// Away and back across many heard buckets: half of a long queue goes quiet, the line
// moves past them, and they come back first, in ticket order.
func testAwayAcrossLongQueue(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := awayLimits(1)
	lim.SessionTTL = time.Hour
	r.fill(t0, lim)
	const n = 3000
	w, tk := r.queueShown(n, t0, lim)
	var heard, quiet []int // indexes into w
	for i := range w {
		if i%2 == 0 {
			heard = append(heard, i)
		} else {
			quiet = append(quiet, i)
		}
	}
	beat := func(now time.Time, idx []int) {
		ids := make([]queue.VisitorID, len(idx))
		for j, i := range idx {
			ids[j] = w[i]
		}
		r.heartbeat(now, ids...)
	}
	now := t0.Add(61 * time.Second)
	beat(t0.Add(50*time.Second), heard)
	r.step(now, lim)
	r.wantStats(queue.Stats{Active: 1, Waiting: n / 2, Away: n / 2, AdmittedTotal: 1})

	// The line moves: room for 700 more, who are the first 700 heard.
	lim.Capacity = 701
	got := r.step(now, lim)
	if len(got) != 700 {
		t.Fatalf("Step with 700 free slots admitted %d", len(got))
	}
	for j, id := range got {
		if id != w[heard[j]] {
			t.Fatalf("admission %d went to %s, want the %d-th present waiter", j, id, j+1)
		}
	}
	// Everyone quiet comes back: ahead of every present waiter behind them.
	beat(now.Add(time.Minute), quiet)
	left := map[uint64]bool{}
	for _, i := range quiet {
		left[tk[i]] = true
	}
	for _, i := range heard[700:] {
		left[tk[i]] = true
	}
	order := slices.Sorted(maps.Keys(left))
	wantInts(t, "positions once the quiet are back", r.positions(order...), seq(len(order)))
	first := r.status(w[quiet[0]], now.Add(time.Minute))
	if first.Position != 1 {
		t.Fatalf("the first quiet waiter back: %+v, want position 1", first)
	}
	// And the places of those who never come back are gone at AwayTTL.
	beat(now.Add(2*time.Minute), quiet[:100])
	res := r.stepResult(now.Add(2*time.Minute).Add(lim.AwayTTL-time.Second), lim)
	if want := len(order); res.Abandoned != want-100 {
		t.Fatalf("Step at AwayTTL dropped %d places, want %d", res.Abandoned, want-100)
	}
}

// A waiter never heard from after joining (a cookie-less flood's places, a bot that
// only replays its cookies later) is not kept away: its place is gone at QueueTTL. One
// heard from once since joining, by Status or Heartbeat, is kept for AwayTTL.
func testSilentSinceJoinIsNotKept(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := awayLimits(1)
	r.fill(t0, lim)
	w, tk := r.queue(4, t0, lim)
	silent, polled, beating, later := w[0], w[1], w[2], w[3]
	r.status(polled, t0.Add(10*time.Second))
	r.heartbeat(t0.Add(10*time.Second), beating)
	r.status(later, t0.Add(50*time.Second))
	if res := r.stepResult(t0.Add(lim.QueueTTL), lim); res.Abandoned != 1 {
		t.Fatalf("Step at the silent waiter's QueueTTL dropped %d places, want 1 (only the one never heard from)", res.Abandoned)
	}
	r.wantStats(queue.Stats{Active: 1, Waiting: 3, AdmittedTotal: 1})
	res := r.stepResult(t0.Add(lim.QueueTTL+10*time.Second), lim)
	if res.Abandoned != 0 {
		t.Fatalf("Step once the heard waiters were quiet for QueueTTL dropped %d places, want 0", res.Abandoned)
	}
	r.wantStats(queue.Stats{Active: 1, Waiting: 1, Away: 2, AdmittedTotal: 1})
	wantInts(t, "positions with two away and the silent one gone", r.positions(tk...), []int{0, 0, 0, 1})
	back := t0.Add(5 * time.Minute)
	r.wantState(silent, back, queue.Unknown)
	if st := r.status(polled, back); !st.Returned || st.Position != 1 {
		t.Fatalf("the waiter heard once by Status, back after 5 minutes: %+v, want returned at 1", st)
	}
	if st := r.status(beating, back); !st.Returned || st.Position != 2 {
		t.Fatalf("the waiter heard once by Heartbeat, back after 5 minutes: %+v, want returned at 2", st)
	}
}
