package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

var passSeq atomic.Int64

// newPass is a fresh pass of uses, valid for a day after t0.
func newPass(uses int) queue.PassUse {
	return queue.PassUse{ID: fmt.Sprintf("%016x", passSeq.Add(1)), Uses: uses, Expires: t0.Add(24 * time.Hour)}
}

func (r room) joinPass(pass queue.PassUse, now time.Time, lim queue.Limits) (queue.VisitorID, queue.Status, bool) {
	r.t.Helper()
	id := queue.NewVisitorID()
	st, ok, err := r.s.JoinPass(context.Background(), id, pass, now, lim)
	if err != nil {
		r.t.Fatalf("JoinPass: %v", err)
	}
	return id, st, ok
}

// Pass holders queue ahead of every waiter without a pass, in arrival order among
// themselves, and are admitted as slots free: never beyond capacity, never beyond the
// rate.
func testPassHoldersGoFirst(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(2)
	active := r.fill(t0, lim)
	plain, plainTickets := r.queue(3, t0, lim)
	var passed []queue.VisitorID
	var passTickets []uint64
	for i := range 3 {
		id, st, ok := r.joinPass(newPass(1), t0.Add(time.Duration(i)*time.Millisecond), lim)
		if !ok || st.State != queue.Queued {
			t.Fatalf("pass holder %d: %v, %v; want queued with the pass", i+1, st.State, ok)
		}
		if st.Position != i+1 {
			t.Fatalf("pass holder %d joined at position %d, want %d (ahead of the 3 without a pass)", i+1, st.Position, i+1)
		}
		passed, passTickets = append(passed, id), append(passTickets, st.Ticket)
	}
	wantInts(t, "positions of pass holders then the others", r.positions(append(passTickets, plainTickets...)...), []int{1, 2, 3, 4, 5, 6})
	if st := r.wantState(plain[0], t0, queue.Queued); st.Position != 4 {
		t.Fatalf("the first waiter without a pass is at %d, want 4", st.Position)
	}
	if got := r.stats(); got.Waiting != 6 {
		t.Fatalf("waiting = %d, want 6", got.Waiting)
	}
	wantIDs(t, "admitted while full", r.step(t0, lim), nil)

	r.leave(active[0])
	wantIDs(t, "admitted with one slot free", r.step(t0, lim), passed[:1])
	r.leave(active[1])
	r.leave(passed[0])
	wantIDs(t, "admitted with two slots free", r.step(t0, lim), passed[1:3])
	if st := r.stats(); st.Active != 2 {
		t.Fatalf("active = %d, want capacity 2", st.Active)
	}
	wantInts(t, "positions after the pass lane went in", r.positions(plainTickets...), []int{1, 2, 3})
	r.leave(passed[1])
	wantIDs(t, "admitted after the pass lane", r.step(t0, lim), plain[:1])

	// A rate of 1 a minute: two free slots admit one pass holder.
	r2 := newRoom(t, open)
	rl := rateLimits(2, 1, time.Minute)
	a := r2.fill(t0, limits(2))
	var lane []queue.VisitorID
	for range 2 {
		id, st, ok := r2.joinPass(newPass(1), t0, rl)
		if !ok || st.State != queue.Queued {
			t.Fatalf("pass holder behind a full room: %v, %v", st.State, ok)
		}
		lane = append(lane, id)
	}
	r2.leave(a[0])
	r2.leave(a[1])
	wantIDs(t, "admitted under a rate of 1 a minute", r2.step(t0, rl), lane[:1])
	wantIDs(t, "admitted in the same minute", r2.step(t0.Add(30*time.Second), rl), nil)
}

// A pass holder is admitted at join when no pass holder waits and a slot is free,
// and queued under Hold.
func testPassAdmitsAtJoin(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(1)
	active := r.fill(t0, lim)
	plain, _ := r.queue(1, t0, lim)
	r.leave(active[0]) // a slot frees; no step has run yet
	id, st, ok := r.joinPass(newPass(1), t0, lim)
	if !ok || st.State != queue.Admitted {
		t.Fatalf("a pass holder with a slot free: %v, %v; want admitted", st.State, ok)
	}
	if st := r.wantState(plain[0], t0, queue.Queued); st.Position != 1 {
		t.Fatalf("the waiter without a pass is at %d, want 1", st.Position)
	}
	r.leave(id)
	hold := lim
	hold.Hold = true
	if _, st, _ := r.joinPass(newPass(1), t0, hold); st.State != queue.Queued || st.Position != 1 {
		t.Fatalf("a pass holder under hold: %v at %d, want queued at 1", st.State, st.Position)
	}
}

// A pass counts its uses: each join uses one, a used-up pass joins nobody, a visitor
// already known uses none, and a turned-away visitor (NoQueue) uses none.
func testPassUsesAreCounted(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(1)
	pass := newPass(2)
	first, st, ok := r.joinPass(pass, t0, lim)
	if !ok || st.State != queue.Admitted {
		t.Fatalf("first use: %v, %v", st.State, ok)
	}
	// Known already: reported as it stands, no use counted.
	st2, ok, err := r.s.JoinPass(context.Background(), first, pass, t0, lim)
	if err != nil || !ok || st2.State != queue.Admitted {
		t.Fatalf("the same visitor again: %v, %v, %v", st2.State, ok, err)
	}
	reject := lim
	reject.NoQueue = true
	if _, st, ok := r.joinPass(pass, t0, reject); !ok || st.State != queue.Rejected {
		t.Fatalf("turned away with a pass: %v, %v; want rejected", st.State, ok)
	}
	if _, st, ok := r.joinPass(pass, t0, lim); !ok || st.State != queue.Queued {
		t.Fatalf("second use: %v, %v; want queued", st.State, ok)
	}
	id, st, ok := r.joinPass(pass, t0, lim)
	if ok {
		t.Fatalf("a third use of a pass of 2 uses was accepted: %v", st.State)
	}
	r.wantState(id, t0, queue.Unknown)
	if got := r.stats(); got.Waiting != 1 || got.Active != 1 {
		t.Fatalf("stats after a used-up pass: %+v, want 1 active, 1 waiting", got)
	}
}

// A pass holder who goes quiet is away like anyone: out of every position, and back
// ahead of the line when heard from.
func testPassHolderAway(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := awayLimits(1)
	r.fill(t0, lim)
	holder, _, ok := r.joinPass(newPass(1), t0, lim)
	if !ok {
		t.Fatal("pass refused")
	}
	plain, tickets := r.queue(2, t0, lim)
	later := t0.Add(lim.QueueTTL / 2)
	r.heartbeat(later, plain...)
	r.step(t0.Add(lim.QueueTTL), lim) // the holder goes away
	wantInts(t, "positions with the pass holder away", r.positions(tickets...), []int{1, 2})
	if got := r.stats(); got.Away != 1 || got.Waiting != 2 {
		t.Fatalf("stats with the pass holder away: %+v", got)
	}
	st := r.status(holder, t0.Add(lim.QueueTTL+time.Second))
	if st.State != queue.Queued || !st.Returned || st.Position != 1 {
		t.Fatalf("the pass holder came back as %+v, want queued at 1, returned", st)
	}
	wantInts(t, "positions with the pass holder back", r.positions(tickets...), []int{2, 3})
}

// OpenShared opens n stores of one fresh room, as n instances sharing a store would.
type OpenShared func(t *testing.T, n int) []queue.Store

// RunPassUses checks that a pass's uses are consumed exactly once each under 200
// concurrent uses spread over instances: exactly uses joins get in with it, the rest
// are told it is used up, and nothing of theirs is kept.
func RunPassUses(t *testing.T, open OpenShared) {
	const instances, tries, uses = 3, 200, 37
	stores := open(t, instances)
	lim := limits(1000)
	pass := newPass(uses)
	var wg sync.WaitGroup
	var accepted, refused, failed atomic.Int64
	ids := make([]queue.VisitorID, tries)
	oks := make([]bool, tries)
	start := make(chan struct{})
	for i := range tries {
		ids[i] = queue.NewVisitorID()
		wg.Go(func() {
			<-start
			st, ok, err := stores[i%instances].JoinPass(context.Background(), ids[i], pass, t0, lim)
			switch {
			case err != nil:
				failed.Add(1)
				t.Errorf("JoinPass: %v", err)
			case ok && st.State == queue.Admitted:
				accepted.Add(1)
				oks[i] = true
			case !ok:
				refused.Add(1)
			default:
				failed.Add(1)
				t.Errorf("JoinPass in an empty room with room for all: %v", st.State)
			}
		})
	}
	close(start)
	wg.Wait()
	if n := accepted.Load() + refused.Load() + failed.Load(); n != tries {
		t.Fatalf("%d answers for %d tries", n, tries)
	}
	if accepted.Load() != uses || refused.Load() != tries-uses {
		t.Fatalf("a pass of %d uses admitted %d and refused %d of %d concurrent tries", uses, accepted.Load(), refused.Load(), tries)
	}
	st, err := stores[0].Stats(context.Background())
	if err != nil || st.Active != uses {
		t.Fatalf("active = %d (%v), want %d", st.Active, err, uses)
	}
	for i, id := range ids {
		got, err := stores[(i+1)%instances].Status(context.Background(), id, t0)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]queue.State{true: queue.Admitted, false: queue.Unknown}[oks[i]]; got.State != want {
			t.Fatalf("visitor %d is %v, want %v", i, got.State, want)
		}
	}
}

// testPassPositionsMatchModel churns a room with and without passes (joins, departures
// from anywhere, admissions) and checks after every round that Positions and Status
// agree with the model: the pass holders in arrival order, then everyone else in
// arrival order, and that Step admits the model's head.
func testPassPositionsMatchModel(t *testing.T, open Open) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 17))
	r := newRoom(t, open)
	lim := limits(3)
	active := r.fill(t0, lim)
	type waiter struct {
		id     queue.VisitorID
		ticket uint64
	}
	var lane, line []waiter // the model: each in arrival order
	pass := newPass(1 << 15)
	for round := range 120 {
		for range rng.IntN(5) {
			if rng.IntN(3) == 0 {
				id, st, ok := r.joinPass(pass, t0, lim)
				switch {
				case !ok:
					t.Fatalf("round %d: the pass was refused", round)
				case st.State == queue.Admitted && len(lane) == 0 && len(active) < lim.Capacity:
					active = append(active, id)
				case st.State == queue.Queued:
					lane = append(lane, waiter{id, st.Ticket})
				default:
					t.Fatalf("round %d: a pass holder: %v with %d pass holders waiting and %d active", round, st.State, len(lane), len(active))
				}
			} else {
				id, st := r.join(t0, lim)
				switch {
				case st.State == queue.Admitted && len(lane)+len(line) == 0 && len(active) < lim.Capacity:
					active = append(active, id)
				case st.State == queue.Queued:
					line = append(line, waiter{id, st.Ticket})
				default:
					t.Fatalf("round %d: a newcomer: %v with %d waiting and %d active", round, st.State, len(lane)+len(line), len(active))
				}
			}
		}
		for range rng.IntN(3) { // departures from anywhere
			q := &line
			if rng.IntN(2) == 0 {
				q = &lane
			}
			if len(*q) == 0 {
				continue
			}
			i := rng.IntN(len(*q))
			if !r.leave((*q)[i].id) {
				t.Fatalf("round %d: Leave of a waiter reported false", round)
			}
			*q = append((*q)[:i], (*q)[i+1:]...)
		}
		if rng.IntN(3) == 0 && len(active) > 0 { // slots free, the head goes in
			n := 1 + rng.IntN(len(active))
			for _, v := range active[:n] {
				r.leave(v)
			}
			active = active[n:]
			admitted := r.step(t0, lim)
			for _, id := range admitted {
				switch {
				case len(lane) > 0 && lane[0].id == id:
					lane = lane[1:]
				case len(lane) == 0 && len(line) > 0 && line[0].id == id:
					line = line[1:]
				default:
					t.Fatalf("round %d: Step admitted %s, not the head of the model", round, id)
				}
			}
			active = append(active, admitted...)
		}
		all := append(append([]waiter(nil), lane...), line...)
		tickets := make([]uint64, len(all))
		want := make([]int, len(all))
		for i, w := range all {
			tickets[i], want[i] = w.ticket, i+1
		}
		wantInts(t, fmt.Sprintf("round %d: positions", round), r.positions(tickets...), want)
		if len(all) > 0 {
			w := all[rng.IntN(len(all))]
			if st := r.status(w.id, t0); st.State != queue.Queued || st.Position != slices.Index(all, w)+1 {
				t.Fatalf("round %d: Status of a waiter: %+v, want position %d", round, st, slices.Index(all, w)+1)
			}
		}
		if st := r.stats(); st.Waiting != len(all) {
			t.Fatalf("round %d: waiting = %d, want %d", round, st.Waiting, len(all))
		}
	}
}
