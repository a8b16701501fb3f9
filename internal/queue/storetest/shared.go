package storetest

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// testPositionsMatchBruteForce churns a queue (joins, departures from anywhere in the
// queue, admissions) and checks after every round that Positions agrees with counting
// the waiters ahead one by one, for every ticket ever handed out.
func testPositionsMatchBruteForce(t *testing.T, open Open) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 42))
	r := newRoom(t, open)
	lim := limits(5)
	active := r.fill(t0, lim)

	queued := map[uint64]queue.VisitorID{} // ticket -> waiter: the model
	byID := map[queue.VisitorID]uint64{}
	var everIssued []uint64
	const rounds = 150
	for round := range rounds {
		for range rng.IntN(8) {
			id, st := r.join(t0, lim)
			if st.State == queue.Queued {
				queued[st.Ticket] = id
				byID[id] = st.Ticket
				everIssued = append(everIssued, st.Ticket)
			} else {
				active = append(active, id)
			}
		}
		for range rng.IntN(4) { // departures from anywhere in the queue
			if len(queued) == 0 {
				break
			}
			tickets := sortedKeys(queued)
			tk := tickets[rng.IntN(len(tickets))]
			if !r.leave(queued[tk]) {
				t.Fatalf("round %d: Leave of waiter with ticket %d reported false", round, tk)
			}
			delete(byID, queued[tk])
			delete(queued, tk)
		}
		if rng.IntN(3) == 0 && len(active) > 0 { // a slot frees, the head goes in
			n := 1 + rng.IntN(len(active))
			for _, v := range active[:n] {
				r.leave(v)
			}
			active = active[n:]
			admitted := r.step(t0, lim)
			for _, id := range admitted {
				tk, ok := byID[id]
				if !ok {
					t.Fatalf("round %d: Step admitted %s, who is not queued", round, id)
				}
				if want := sortedKeys(queued)[0]; tk != want {
					t.Fatalf("round %d: Step admitted ticket %d before the head %d", round, tk, want)
				}
				delete(queued, tk)
				delete(byID, id)
			}
			active = append(active, admitted...)
		}

		asked := append(slices.Clone(everIssued), 0, 1<<40) // never-issued tickets too
		rng.Shuffle(len(asked), func(i, j int) { asked[i], asked[j] = asked[j], asked[i] })
		got := r.positions(asked...)
		live := sortedKeys(queued)
		for i, tk := range asked {
			want := 0
			if _, ok := queued[tk]; ok {
				want, _ = slices.BinarySearch(live, tk)
				want++
			}
			if got[i] != want {
				t.Fatalf("round %d: position of ticket %d = %d, brute force says %d (%d queued)",
					round, tk, got[i], want, len(live))
			}
		}
		if len(live) > 0 { // Status agrees with Positions
			tk := live[rng.IntN(len(live))]
			if st := r.status(queued[tk], t0); st.Ticket != tk || st.Position != slices.Index(live, tk)+1 {
				t.Fatalf("round %d: Status of ticket %d = %+v, want position %d", round, tk, st, slices.Index(live, tk)+1)
			}
		}
		if st := r.stats(); st.Waiting != len(queued) || st.Active != len(active) {
			t.Fatalf("round %d: Stats = %+v, model has %d active and %d waiting", round, st, len(active), len(queued))
		}
	}
}

func sortedKeys(m map[uint64]queue.VisitorID) []uint64 {
	keys := make([]uint64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func testSecret(t *testing.T, open Open) {
	r := newRoom(t, open)
	const n = 16
	got := make([][]byte, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s, err := r.s.Secret(context.Background(), []byte{'c', byte('a' + i)})
			if err != nil {
				t.Errorf("Secret: %v", err)
			}
			got[i] = s
		})
	}
	wg.Wait()
	for i := range got {
		if len(got[i]) != 2 || string(got[i]) != string(got[0]) {
			t.Fatalf("candidate %d got secret %q, candidate 0 got %q: all must agree on one candidate", i, got[i], got[0])
		}
	}
	again, err := r.s.Secret(context.Background(), []byte("latecomer"))
	if err != nil || string(again) != string(got[0]) {
		t.Fatalf("a later candidate got %q, %v; want the first secret %q", again, err, got[0])
	}
}

// subscriber collects what a subscription delivers.
type subscriber struct {
	mu   sync.Mutex
	ids  []queue.VisitorID
	more chan struct{}
}

func newSubscriber() *subscriber { return &subscriber{more: make(chan struct{}, 1)} }

func (s *subscriber) deliver(ids []queue.VisitorID) {
	s.mu.Lock()
	s.ids = append(s.ids, ids...)
	s.mu.Unlock()
	select {
	case s.more <- struct{}{}:
	default:
	}
}

func (s *subscriber) got() []queue.VisitorID {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ids)
}

// waitFor waits until the subscriber has been told of want (in any order); delivery
// may be asynchronous, so this is the one place the suite waits on a real clock.
func (s *subscriber) waitFor(t *testing.T, what string, want []queue.VisitorID) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		got := s.got()
		if containsAll(got, want) {
			return
		}
		select {
		case <-s.more:
		case <-deadline:
			t.Fatalf("%s: subscriber got %v, want it to include %v", what, got, want)
		}
	}
}

func containsAll(got, want []queue.VisitorID) bool {
	for _, w := range want {
		if !slices.Contains(got, w) {
			return false
		}
	}
	return true
}

func testSubscribe(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(2)
	active := r.fill(t0, lim)
	ids, _ := r.queue(4, t0, lim)

	kept, dropped := newSubscriber(), newSubscriber()
	cancelKept := r.s.Subscribe(kept.deliver)
	defer cancelKept()
	cancelDropped := r.s.Subscribe(dropped.deliver)

	r.leave(active[0])
	r.leave(active[1])
	first := r.step(t0, lim)
	wantIDs(t, "Step admitted", first, ids[:2])
	kept.waitFor(t, "first step", first)
	dropped.waitFor(t, "first step", first)

	cancelDropped()
	cancelDropped() // cancelling twice is harmless
	r.leave(first[0])
	second := r.step(t0, lim)
	wantIDs(t, "second Step admitted", second, ids[2:3])
	kept.waitFor(t, "second step", second)
	// The kept subscriber has heard of the second step; give the cancelled one a moment
	// in which a (wrong) delivery would arrive too.
	time.Sleep(100 * time.Millisecond)
	if got := dropped.got(); slices.Contains(got, second[0]) {
		t.Fatalf("a cancelled subscription was told of %v", second)
	}
	if got := kept.got(); slices.ContainsFunc(got, func(id queue.VisitorID) bool {
		return slices.Contains(active, id)
	}) {
		t.Fatalf("subscriber was told of visitors admitted at join: %v", got)
	}
}

// testConcurrency lets thousands of goroutines join, wait, step and leave at once and
// checks that capacity is never exceeded: by sampling Stats, and by counting visitors
// who learnt they were admitted and have not left yet (that count is never above the
// store's, since a visitor is counted after admission and uncounted before leaving).
func testConcurrency(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(25)
	visitors := 2000
	if testing.Short() {
		visitors = 300
	}
	ctx := context.Background()
	before := r.stats().AdmittedTotal
	var (
		holding, peak atomic.Int64
		admitted      atomic.Int64
		// Every admission, as the calls that made it reported it: AdmittedTotal must
		// have grown by exactly their sum.
		joinAdmitted, stepAdmitted atomic.Int64
		wg                         sync.WaitGroup
		start                      = make(chan struct{})
	)
	hold := func(id queue.VisitorID) {
		n := holding.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if n > int64(lim.Capacity) {
			t.Errorf("%d visitors hold a slot at once, capacity is %d", n, lim.Capacity)
		}
		admitted.Add(1)
		// Hold the slot for a few round trips, so that many visitors hold one at once.
		for range 3 {
			if _, err := r.s.Touch(ctx, id, t0); err != nil {
				t.Errorf("Touch: %v", err)
			}
		}
		holding.Add(-1)
	}
	for i := range visitors {
		wg.Go(func() {
			<-start
			id := queue.NewVisitorID()
			st, err := r.s.Join(ctx, id, t0, lim)
			if err != nil {
				t.Errorf("Join: %v", err)
				return
			}
			if st.State == queue.Admitted {
				joinAdmitted.Add(1)
			}
			for try := 0; st.State == queue.Queued && try < 3+i%5; try++ {
				res, err := r.s.Step(ctx, t0, lim)
				if err != nil {
					t.Errorf("Step: %v", err)
					return
				}
				stepAdmitted.Add(int64(len(res.Admitted)))
				if st, err = r.s.Status(ctx, id, t0); err != nil {
					t.Errorf("Status: %v", err)
					return
				}
			}
			if st.State == queue.Admitted {
				hold(id)
			}
			// Waiters who give up leave too; one admitted meanwhile just frees the slot.
			if _, err := r.s.Leave(ctx, id); err != nil {
				t.Errorf("Leave: %v", err)
			}
		})
	}
	done, sampled := make(chan struct{}), make(chan struct{})
	var samples int
	go func() {
		defer close(sampled)
		for {
			st, err := r.s.Stats(ctx)
			if err != nil {
				t.Errorf("Stats: %v", err)
				return
			}
			samples++
			if st.Active > lim.Capacity {
				t.Errorf("Stats.Active = %d over capacity %d", st.Active, lim.Capacity)
			}
			select {
			case <-done:
				return
			default:
			}
		}
	}()
	close(start)
	wg.Wait()
	close(done)
	<-sampled
	total := before + uint64(joinAdmitted.Load()+stepAdmitted.Load())
	r.wantStats(queue.Stats{Active: 0, Waiting: 0, AdmittedTotal: total})
	if uint64(admitted.Load()) > total-before {
		t.Fatalf("%d visitors saw themselves admitted, but the calls admitted %d", admitted.Load(), total-before)
	}
	if samples == 0 {
		t.Fatal("no Stats sample was taken while the visitors ran")
	}
	t.Logf("%d visitors, %d saw themselves admitted, peak %d holding, %d Stats samples",
		visitors, admitted.Load(), peak.Load(), samples)
}
