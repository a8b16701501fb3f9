package storetest

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// The sale-day policies: the admission rate, random order, holding the queue, turning
// away instead of queueing, and the lottery of a scheduled event.

func rateLimits(capacity, n int, per time.Duration) queue.Limits {
	lim := limits(capacity)
	lim.Rate, lim.RatePer = n, per
	return lim
}

// The rate binds at join and at step; the window slides (an admission counts for
// exactly RatePer after it was made).
func testRateLimitsJoinAndStep(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := rateLimits(100, 3, time.Minute)
	var queued []queue.VisitorID
	for i := range 5 {
		id, st := r.join(t0.Add(time.Duration(i)*time.Second), lim)
		switch {
		case i < 3 && st.State != queue.Admitted:
			t.Fatalf("join %d under a rate of 3/min: %v, want admitted", i+1, st.State)
		case i >= 3 && st.State != queue.Queued:
			t.Fatalf("join %d beyond a rate of 3/min with free capacity: %v, want queued", i+1, st.State)
		case i >= 3:
			queued = append(queued, id)
		}
	}
	r.heartbeat(t0.Add(50*time.Second), queued...)
	if ids := r.step(t0.Add(59*time.Second), lim); len(ids) != 0 {
		t.Fatalf("step inside the window admitted %v", ids)
	}
	// At t0+60s the first admission (t0) has left the window: one more may go in.
	wantIDs(t, "step as the first admission leaves the window", r.step(t0.Add(time.Minute), lim), queued[:1])
	wantIDs(t, "step as the second leaves", r.step(t0.Add(time.Minute+time.Second), lim), queued[1:])
	// The queue is empty, but the window is full (t0+2s, +60s, +61s).
	if _, st := r.join(t0.Add(61*time.Second), lim); st.State != queue.Queued {
		t.Fatalf("join with a full rate window: %v, want queued", st.State)
	}
	r.wantStats(queue.Stats{Active: 5, Waiting: 1, AdmittedTotal: 5})
}

// The operator's forced admission goes beyond the rate but counts against it.
func testRateCountsForcedAdmissions(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := rateLimits(100, 2, time.Minute)
	r.join(t0, lim)
	r.join(t0, lim)
	waiters, _ := r.queue(4, t0, lim)
	res, err := r.s.AdmitNow(context.Background(), 3, t0.Add(time.Second), lim)
	if err != nil || len(res.Admitted) != 3 {
		t.Fatalf("AdmitNow(3) over the rate: %+v, %v; want 3 admitted", res, err)
	}
	// The window holds t0, t0, t0+1s x3: the first two leave at t0+60s, the rest at
	// t0+61s, so nothing may be admitted before then.
	r.heartbeat(t0.Add(30*time.Second), waiters[3])
	if ids := r.step(t0.Add(60*time.Second), lim); len(ids) != 0 {
		t.Fatalf("step while forced admissions fill the window admitted %v", ids)
	}
	wantIDs(t, "step once the window empties", r.step(t0.Add(61*time.Second), lim), waiters[3:])
}

// Many joiners and steppers at once, in phases of one shared time: no window of
// RatePer ever holds more than Rate admissions, and the rate is actually reached.
func testRateUnderConcurrency(t *testing.T, open Open) {
	r := newRoom(t, open)
	const n, phases, workers = 7, 16, 40
	per := 4 * time.Second
	lim := rateLimits(10_000, n, per)
	ctx := context.Background()
	perPhase := make([]int, phases)
	for p := range phases {
		now := t0.Add(time.Duration(p) * time.Second)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				admitted := 0
				if w%4 == 0 {
					res, err := r.s.Step(ctx, now, lim)
					if err != nil {
						t.Errorf("Step: %v", err)
						return
					}
					admitted = len(res.Admitted)
				} else {
					st, err := r.s.Join(ctx, queue.NewVisitorID(), now, lim)
					if err != nil {
						t.Errorf("Join: %v", err)
						return
					}
					if st.State == queue.Admitted {
						admitted = 1
					}
				}
				mu.Lock()
				perPhase[p] += admitted
				mu.Unlock()
			})
		}
		wg.Wait()
		// Keep every waiter alive: only the rate may hold anyone back.
		if err := r.s.Heartbeat(ctx, nil, now); err != nil {
			t.Fatal(err)
		}
	}
	total, fullWindows := 0, 0
	for p := range phases {
		total += perPhase[p]
		inWindow := 0 // admissions at times in (now-per, now]: phases p-3..p
		for q := max(p-3, 0); q <= p; q++ {
			inWindow += perPhase[q]
		}
		if inWindow > n {
			t.Fatalf("%d admissions in the %v window ending at phase %d (per phase %v), rate is %d", inWindow, per, p, perPhase, n)
		}
		if inWindow == n {
			fullWindows++
		}
	}
	if st := r.stats(); st.AdmittedTotal != uint64(total) {
		t.Fatalf("AdmittedTotal %d, callers saw %d admissions", st.AdmittedTotal, total)
	}
	if fullWindows < phases/2 {
		t.Fatalf("the rate was reached in only %d of %d windows (per phase %v): the limit holds back too much", fullWindows, phases, perPhase)
	}
	t.Logf("admissions per phase %v", perPhase)
}

// chiSquare is Pearson's statistic of counts against a uniform expectation.
func chiSquare(counts []int) float64 {
	total := 0
	for _, c := range counts {
		total += c
	}
	want := float64(total) / float64(len(counts))
	var x float64
	for _, c := range counts {
		d := float64(c) - want
		x += d * d / want
	}
	return x
}

// chiSquareCritical holds the statistic a uniform source exceeds with probability
// 1e-4, by degrees of freedom: a false alarm once in ten thousand runs.
var chiSquareCritical = map[int]float64{7: 29.88, 8: 31.83}

// In random mode the admitted waiter is uniform among the live waiters: never one who
// left or went silent, and each live one equally often (a chi-square test over many
// rounds of one pick from nine live waiters among twelve).
func testRandomPicksUniformlyAmongLive(t *testing.T, open Open) {
	r := newRoom(t, open)
	rounds := 900
	if testing.Short() {
		rounds = 300
	}
	const queued = 12
	left, silent := []int{2, 7}, 5 // arrival indexes that must never be picked
	counts := make([]int, queued)
	now := t0
	for round := range rounds {
		lim := limits(1)
		lim.Random = true
		holder, _ := r.join(now, lim)
		ids, _ := r.queue(queued, now, lim)
		for _, i := range left {
			r.leave(ids[i])
		}
		later := now.Add(lim.QueueTTL / 2)
		for i, id := range ids {
			if i != silent {
				r.heartbeat(later, id)
			}
		}
		r.leave(holder)
		picked := r.step(now.Add(lim.QueueTTL+time.Second), lim)
		if len(picked) != 1 {
			t.Fatalf("round %d: step with one free slot admitted %v", round, picked)
		}
		i := slices.Index(ids, picked[0])
		if i < 0 || slices.Contains(left, i) || i == silent {
			t.Fatalf("round %d: random step admitted arrival %d, who left or went silent", round, i)
		}
		counts[i]++
		if err := r.s.Reset(context.Background()); err != nil {
			t.Fatal(err)
		}
		now = now.Add(5 * time.Minute)
	}
	var live []int
	for i, c := range counts {
		if !slices.Contains(left, i) && i != silent {
			live = append(live, c)
		}
	}
	x := chiSquare(live)
	t.Logf("picks per arrival %v, chi-square %.2f over %d live waiters", counts, x, len(live))
	if x > chiSquareCritical[len(live)-1] {
		t.Fatalf("random picks are not uniform: %v (chi-square %.2f > %.2f)", counts, x, chiSquareCritical[len(live)-1])
	}
}

// Hold (queue_all) admits nobody new: joins queue even into an empty room, steps admit
// nobody; the operator's AdmitNow still works.
func testHoldQueuesEveryone(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(5)
	lim.Hold = true
	ids, _ := r.queue(3, t0, lim)
	if got := r.step(t0.Add(time.Second), lim); len(got) != 0 {
		t.Fatalf("step while holding admitted %v", got)
	}
	res, err := r.s.AdmitNow(context.Background(), 1, t0.Add(2*time.Second), lim)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "AdmitNow while holding", res.Admitted, ids[:1])
	lim.Hold = false
	wantIDs(t, "step after the hold ends", r.step(t0.Add(3*time.Second), lim), ids[1:])
}

// NoQueue (reject) admits while it can and otherwise turns the visitor away without
// keeping anything.
func testNoQueueTurnsAway(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(2)
	lim.NoQueue = true
	r.fill(t0, lim)
	id, st := r.join(t0, lim)
	if st.State != queue.Rejected {
		t.Fatalf("join into a full room without a queue: %+v, want rejected", st)
	}
	r.wantState(id, t0, queue.Unknown)
	r.wantStats(queue.Stats{Active: 2, Waiting: 0, AdmittedTotal: 2})
	// The rate turns away too, with capacity to spare.
	r = newRoom(t, open)
	lim.Rate, lim.RatePer, lim.Capacity = 2, time.Minute, 10
	r.join(t0, lim)
	r.join(t0, lim)
	if _, st := r.join(t0, lim); st.State != queue.Rejected {
		t.Fatalf("join beyond the rate without a queue: %+v, want rejected", st)
	}
}

// The lottery: Shuffle draws once per key, keeps the ticket set (a later arrival is
// behind everyone), liveness follows each waiter to its new ticket, and the first
// arrival ends up at every position equally often.
func testShuffleIsALottery(t *testing.T, open Open) {
	r := newRoom(t, open)
	ctx := context.Background()
	const waiters = 8
	rounds := 400
	if testing.Short() {
		rounds = 150
	}
	firstAt := make([]int, waiters)
	now := t0
	for round := range rounds {
		lim := limits(1)
		lim.Hold = true
		ids, tickets := r.queue(waiters, now, lim)
		key := now.Format(time.RFC3339)
		if ok, err := r.s.Shuffle(ctx, key); err != nil || !ok {
			t.Fatalf("round %d: first Shuffle = %v, %v; want true", round, ok, err)
		}
		if ok, err := r.s.Shuffle(ctx, key); err != nil || ok {
			t.Fatalf("round %d: second Shuffle with the same key = %v, %v; want false", round, ok, err)
		}
		var got []uint64
		positions := make([]int, waiters)
		for i, id := range ids {
			st := r.status(id, now)
			if st.State != queue.Queued {
				t.Fatalf("round %d: waiter %d is %v after the shuffle", round, i, st.State)
			}
			got = append(got, st.Ticket)
			positions[i] = st.Position
		}
		slices.Sort(got)
		if !slices.Equal(got, tickets) {
			t.Fatalf("round %d: tickets after the shuffle %v, before %v", round, got, tickets)
		}
		firstAt[positions[0]-1]++
		if round == 0 {
			late, st := r.join(now, lim)
			if st.Position != waiters+1 {
				t.Fatalf("an arrival after the shuffle is at %d, want %d", st.Position, waiters+1)
			}
			// Everyone but the one at position 3 stays heard: exactly that one is dropped,
			// and the rest go in by their new order.
			var silent queue.VisitorID
			byPos := make([]queue.VisitorID, waiters)
			for i, id := range ids {
				byPos[positions[i]-1] = id
			}
			silent = byPos[2]
			for _, id := range append(slices.Clone(ids), late) {
				if id != silent {
					r.heartbeat(now.Add(lim.QueueTTL/2), id)
				}
			}
			lim.Hold, lim.Capacity = false, 100
			res := r.stepResult(now.Add(lim.QueueTTL+time.Second), lim)
			want := append(slices.Delete(slices.Clone(byPos), 2, 3), late)
			if res.Abandoned != 1 {
				t.Fatalf("step after the shuffle dropped %d silent waiters, want 1", res.Abandoned)
			}
			wantIDs(t, "admission order after the shuffle", res.Admitted, want)
		}
		if err := r.s.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		now = now.Add(5 * time.Minute)
	}
	x := chiSquare(firstAt)
	t.Logf("first arrival's place after the draw %v, chi-square %.2f", firstAt, x)
	if x > chiSquareCritical[waiters-1] || math.IsNaN(x) {
		t.Fatalf("the draw favours some places: %v (chi-square %.2f)", firstAt, x)
	}
}
