package redisstore

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// A surge of concurrent joins is batched into fewer round trips, and each visitor is
// still decided as if it came alone: exactly capacity admitted, the rest queued with
// distinct tickets whose positions are 1..n. Joins under different limits (a reload
// between them) are never decided under each other's limits.
func TestJoinsAreBatchedAndExact(t *testing.T) {
	srv := testredis.Start(t)
	mod := provision(t, &Redis{URL: "redis://" + srv.Addr, Timeout: caddy.Duration(5 * time.Second)})
	s := open(t, mod)
	now := time.Unix(1_800_000_000, 0)
	small := queue.Limits{Capacity: 10, SessionTTL: time.Hour, QueueTTL: time.Hour}
	large := small
	large.Capacity = 1000 // would admit everyone, if it leaked into the other joins

	const visitors = 400
	scripts0, _ := srv.Commands(t)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		admitted int
		queued   = map[int]bool{}
		tickets  = map[uint64]bool{}
	)
	for range visitors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := s.Join(context.Background(), queue.NewVisitorID(), now, small)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			switch st.State {
			case queue.Admitted:
				admitted++
			case queue.Queued:
				if queued[st.Position] || tickets[st.Ticket] {
					t.Errorf("position %d or ticket %d given twice", st.Position, st.Ticket)
				}
				queued[st.Position], tickets[st.Ticket] = true, true
			}
		}()
	}
	wg.Wait()
	scripts1, _ := srv.Commands(t)
	if admitted != 10 || len(queued) != visitors-10 {
		t.Fatalf("%d admitted and %d queued at capacity 10, want 10 and %d", admitted, len(queued), visitors-10)
	}
	for p := 1; p <= visitors-10; p++ {
		if !queued[p] {
			t.Fatalf("no waiter at position %d", p)
		}
	}
	calls := scripts1 - scripts0
	t.Logf("%d joins in %d script calls", visitors, calls)
	if calls >= visitors {
		t.Fatalf("%d joins took %d script calls: not batched", visitors, calls)
	}

	// Mixed limits in flight at once on an empty room: joins under capacity 10 are
	// admitted only while fewer than 10 are in, whatever the capacity-1000 joins beside
	// them do; had they been decided under the large limits, all 50 would be in.
	s = open(t, mod)
	var smallAdmitted int
	for i := range 100 {
		wg.Add(1)
		lim := small
		if i%2 == 0 {
			lim = large
		}
		go func() {
			defer wg.Done()
			st, err := s.Join(context.Background(), queue.NewVisitorID(), now, lim)
			if err != nil {
				t.Error(err)
				return
			}
			if lim == small && st.State == queue.Admitted {
				mu.Lock()
				smallAdmitted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if smallAdmitted > 10 {
		t.Fatalf("%d joins under capacity 10 were admitted", smallAdmitted)
	}
}

// A lone visitor's join is one script call, made for it alone, one visitor after
// another. A visitor who gives up (the request's context canceled) gets an error and
// the room goes on: the next join is decided as usual.
func TestLoneJoins(t *testing.T) {
	srv := testredis.Start(t)
	mod := provision(t, &Redis{URL: "redis://" + srv.Addr, Timeout: caddy.Duration(5 * time.Second)})
	s := open(t, mod)
	ctx, now := context.Background(), time.Unix(1_800_000_000, 0)
	lim := queue.Limits{Capacity: 1, SessionTTL: time.Hour, QueueTTL: time.Hour}
	if _, err := s.Join(ctx, queue.NewVisitorID(), now, lim); err != nil { // loads the script
		t.Fatal(err)
	}
	scripts0, _ := srv.Commands(t)
	const joins = 20
	for i := 1; i <= joins; i++ {
		st, err := s.Join(ctx, queue.NewVisitorID(), now, lim)
		if err != nil || st.State != queue.Queued || st.Position != i {
			t.Fatalf("join %d: %+v, %v; want queued at %d", i, st, err, i)
		}
	}
	if scripts1, _ := srv.Commands(t); scripts1-scripts0 != joins {
		t.Fatalf("%d lone joins took %d script calls", joins, scripts1-scripts0)
	}

	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Join(gone, queue.NewVisitorID(), now, lim); !errors.Is(err, context.Canceled) {
		t.Fatalf("a join whose request was canceled: %v, want context.Canceled", err)
	}
	st, err := s.Join(ctx, queue.NewVisitorID(), now, lim)
	stats, _ := s.Stats(ctx)
	if err != nil || st.State != queue.Queued || st.Position != stats.Waiting {
		t.Fatalf("the join after a canceled one: %+v, %v, with %d waiting", st, err, stats.Waiting)
	}
}

// While the room has a line, a join waits join_wait for others to share its script
// call; with no line (a join may be an admission) it goes at once. The room learns
// which from the joins' answers.
func TestJoinsWaitForCompanyWhileThereIsALine(t *testing.T) {
	srv := testredis.Start(t)
	ctx, now := context.Background(), time.Unix(1_800_000_000, 0)
	lim := queue.Limits{Capacity: 1, SessionTTL: time.Hour, QueueTTL: time.Hour}
	// Two instances of one room: one waits long enough for every concurrent join below
	// to arrive, the other so long that a join that waited would fail the test.
	wait, never := caddy.Duration(2*time.Second), caddy.Duration(time.Hour)
	waits := open(t, provision(t, &Redis{URL: "redis://" + srv.Addr, Timeout: caddy.Duration(10 * time.Second), JoinWait: wait}))
	ctx2, cancel := caddy.NewContext(caddy.Context{Context: ctx})
	t.Cleanup(cancel)
	mod := provision(t, &Redis{URL: "redis://" + srv.Addr, Timeout: caddy.Duration(2 * time.Hour), JoinWait: never})
	st, release, err := mod.OpenStore(ctx2, waits.roomName())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	prompt := st.(*roomStore)
	// A join of the other that waited the hour fails with this deadline instead.
	promptly, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()

	// No line: the first visitor is admitted at once.
	if st, err := prompt.Join(promptly, queue.NewVisitorID(), now, lim); err != nil || st.State != queue.Admitted {
		t.Fatalf("the first join: %+v, %v", st, err)
	}
	// The next two are queued: the first goes at once, as this instance has seen no
	// line yet, and the second waits join_wait alone.
	for i := range 2 {
		if st, err := waits.Join(ctx, queue.NewVisitorID(), now, lim); err != nil || st.State != queue.Queued {
			t.Fatalf("join %d: %+v, %v", i, st, err)
		}
	}

	// A line: joins that arrive together share one call.
	scripts0, _ := srv.Commands(t)
	const together = 5
	var wg sync.WaitGroup
	positions := make([]int, together)
	for i := range together {
		wg.Go(func() {
			st, err := waits.Join(ctx, queue.NewVisitorID(), now, lim)
			if err != nil || st.State != queue.Queued {
				t.Errorf("join %d in the line: %+v, %v", i, st, err)
			}
			positions[i] = st.Position
		})
	}
	wg.Wait()
	if scripts1, _ := srv.Commands(t); scripts1-scripts0 != 1 {
		t.Fatalf("%d joins that arrived together while there was a line took %d script calls", together, scripts1-scripts0)
	}
	slices.Sort(positions)
	if !slices.Equal(positions, []int{3, 4, 5, 6, 7}) {
		t.Fatalf("positions %v, want 3 to 7", positions)
	}

	// The line admitted, the instance that saw it waits once more, and learns from the
	// answer (admitted) that the next goes at once. The other never saw the line.
	if _, err := waits.Step(ctx, now, queue.Limits{Capacity: 100, SessionTTL: time.Hour, QueueTTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	lim.Capacity = 100
	for i := range 2 {
		if st, err := waits.Join(ctx, queue.NewVisitorID(), now, lim); err != nil || st.State != queue.Admitted {
			t.Fatalf("join %d after the line was admitted: %+v, %v", i, st, err)
		}
	}
	if st, err := prompt.Join(promptly, queue.NewVisitorID(), now, lim); err != nil || st.State != queue.Admitted { // an hour, had it waited
		t.Fatalf("a join on the instance that saw no line: %+v, %v", st, err)
	}
}

// One join script call for a batch leaves the room exactly as the same visitors
// joining one call each, and as the Store contract says: the same answers, counters
// and positions, and the same waiters kept, dropped and admitted by the step after.
// The batch reads the room once and writes its waiters together at the end, so this
// covers what that could get wrong: sessions that lapse before and during the batch,
// admissions at join until the room is full, a batch that crosses a heard bucket (256
// tickets) and spans the queue TTL's cutoff, a fresh queue (new base and epoch), an id
// given twice in one batch, and a waiter who joins again.
func TestJoinBatchIsJoinsOneByOne(t *testing.T) {
	srv := testredis.Start(t)
	mod := provision(t, &Redis{URL: "redis://" + srv.Addr, Timeout: caddy.Duration(5 * time.Second)})
	batched, lone := open(t, mod), open(t, mod)
	// Both counters start at the same ticket, not each from the clock (failover.go).
	for _, s := range []*roomStore{batched, lone} {
		if _, err := srv.Do("HSET", s.keys[2], "ticket", "1"); err != nil {
			t.Fatal(err)
		}
	}
	ctx, t0 := context.Background(), time.Unix(1_800_000_000, 0)
	lim := queue.Limits{Capacity: 5, SessionTTL: time.Minute, QueueTTL: 30 * time.Second}

	visitor := func(now time.Time) *joinRequest {
		return &joinRequest{id: queue.NewVisitorID(), now: now, lim: lim}
	}
	var ids []queue.VisitorID // every visitor queued, in arrival order
	joined := map[queue.VisitorID]time.Time{}
	join := func(batch []*joinRequest) {
		t.Helper()
		got := batched.joinBatch(ctx, batch)
		for i, req := range batch {
			want := lone.joinBatch(ctx, []*joinRequest{req})[0]
			if got[i].err != nil || want.err != nil || got[i].status != want.status {
				t.Fatalf("visitor %d of a batch of %d: batched %+v (%v), one by one %+v (%v)",
					i, len(batch), got[i].status, got[i].err, want.status, want.err)
			}
			if _, ok := joined[req.id]; !ok && got[i].status.State == queue.Queued {
				ids = append(ids, req.id)
				joined[req.id] = req.now
			}
		}
	}
	compare := func(when string, want queue.Stats) {
		t.Helper()
		bs, err1 := batched.Stats(ctx)
		ls, err2 := lone.Stats(ctx)
		if err1 != nil || err2 != nil || bs != ls || bs.Active != want.Active || bs.Waiting != want.Waiting {
			t.Fatalf("%s: stats batched %+v (%v), one by one %+v (%v); want %d active, %d waiting",
				when, bs, err1, ls, err2, want.Active, want.Waiting)
		}
		for _, id := range ids {
			// Status hears a waiter too; at t0 that moves no one's heard time forward.
			b, err1 := batched.Status(ctx, id, t0)
			l, err2 := lone.Status(ctx, id, t0)
			if err1 != nil || err2 != nil || b != l {
				t.Fatalf("%s: visitor %v batched %+v (%v), one by one %+v (%v)", when, id, b, err1, l, err2)
			}
		}
	}

	// Three sessions that lapsed before t0, and one that lapses 450 ms into a burst of
	// a visitor every 100 ms from t0: the lapsed slots are free at once, so four are
	// admitted and the fifth finds the room full; the fourth session is gone by the
	// end of the burst, whose waiters fill more than one bucket.
	old := t0.Add(-2 * lim.SessionTTL)
	join([]*joinRequest{visitor(old), visitor(old), visitor(old), visitor(t0.Add(450*time.Millisecond - lim.SessionTTL))})
	var burst []*joinRequest
	for i := range 300 {
		burst = append(burst, visitor(t0.Add(time.Duration(i)*100*time.Millisecond)))
	}
	burst = append(burst, burst[2], burst[40]) // admitted, and queued, earlier in the batch
	join(burst)
	join([]*joinRequest{burst[100], visitor(t0.Add(31 * time.Second)), burst[2]}) // a waiter, someone new, an admitted one
	compare("after the joins", queue.Stats{Active: 4, Waiting: 300 - 4 + 1})

	// Every third waiter is heard at t0+20s. At t0+45s the others who joined by t0+15s
	// have been silent for over queue_ttl and are dropped, and the one free slot goes
	// to the head, who was heard.
	var heard []queue.VisitorID
	silent := 0
	for i, id := range ids {
		if i%3 == 0 {
			heard = append(heard, id)
		} else if !joined[id].After(t0.Add(15 * time.Second)) {
			silent++
		}
	}
	for _, s := range []*roomStore{batched, lone} {
		if err := s.Heartbeat(ctx, heard, t0.Add(20*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	bs, err1 := batched.Step(ctx, t0.Add(45*time.Second), lim)
	ls, err2 := lone.Step(ctx, t0.Add(45*time.Second), lim)
	if err1 != nil || err2 != nil || bs.Abandoned != ls.Abandoned || !slices.Equal(bs.Admitted, ls.Admitted) {
		t.Fatalf("step: batched %+v (%v), one by one %+v (%v)", bs, err1, ls, err2)
	}
	if bs.Abandoned != silent || !slices.Equal(bs.Admitted, heard[:1]) {
		t.Fatalf("step dropped %d and admitted %v; want %d dropped and %v", bs.Abandoned, bs.Admitted, silent, heard[:1])
	}
	compare("after the step", queue.Stats{Active: 5, Waiting: 300 - 4 + 1 - silent - 1})

	// The line empties, and the next batch starts a fresh queue.
	for _, s := range []*roomStore{batched, lone} {
		if err := s.Reset(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ids = nil
	var again []*joinRequest
	for i := range 20 {
		again = append(again, visitor(t0.Add(time.Hour+time.Duration(i)*time.Millisecond)))
	}
	join(again)
	compare("a fresh queue", queue.Stats{Active: 5, Waiting: 15})
}
