package redisstore

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// A failover as it really is: the master holding the room is killed with no WAIT in
// the middle of a surge of joins, leaves and admissions, so its replica takes over
// with whatever asynchronous replication had sent it. Two cases:
//
//   - kill: the replica is healthy, and the master is SIGKILLed at an instant of the
//     surge; what is lost is what had not reached the replica yet.
//   - lagging-replica: the replica falls behind first (it is stopped and its link
//     dropped, as a replica whose link broke just before its master died), the surge
//     goes on for a counted number of acknowledged writes, and then the master is
//     killed: those writes are lost for certain.
//
// Whatever was lost, the test asserts what must hold: the room answers again within a
// few store calls once the replica is master; the store never holds more than capacity;
// nobody is both admitted and queued; the survivors' positions are exact and dense; no
// ticket is ever handed to two visitors, and every ticket handed out after the failover
// is above every ticket handed out before it (a lost one included), so a lost ticket
// never names someone else's place. It then counts what was lost and checks what a
// visitor whose write was lost meets. The figures are logged for
// docs/several-instances.md.
func TestClusterFailoverWithoutWait(t *testing.T) {
	for _, lagging := range []bool{false, true} {
		name := "kill"
		if lagging {
			name = "lagging-replica"
		}
		t.Run(name, func(t *testing.T) { failoverWithoutWait(t, lagging) })
	}
}

// Surge sizes: acknowledged writes before the replica falls behind (or the kill), while
// it is behind, and after the failover.
const (
	surgeJoinsBefore  = 1500
	surgeAdmitsBefore = 40
	surgeJoinsLagging = 300
	surgeAdmitsLag    = 15
	surgeJoinsAfter   = 300
	surgeAdmitsAfter  = 15
	// callsAfterPromotion bounds the store calls that may fail once the replica is
	// master: the first failures ask for a new slot map, which go-redis loads in the
	// background.
	callsAfterPromotion = 10
)

func failoverWithoutWait(t *testing.T, lagging bool) {
	cl := testredis.StartClusterWithReplicas(t)
	mod := provision(t, &Redis{Addresses: cl.Addrs, Timeout: caddy.Duration(time.Second)})
	s := open(t, mod)
	ctx := context.Background()
	g := &surge{s: s, lim: queue.Limits{Capacity: 20, SessionTTL: time.Hour, QueueTTL: 24 * time.Hour}}
	master, replica := roomNodes(t, cl, s.keys[0])

	var stop atomic.Bool
	var wg sync.WaitGroup
	start := func() {
		stop.Store(false)
		for range 4 {
			wg.Go(func() { g.joiner(&stop) })
		}
		wg.Go(func() { g.admitter(&stop) })
	}
	halt := func() { stop.Store(true); wg.Wait() }
	start()
	defer halt()

	g.waitFor(t, phaseSynced, surgeJoinsBefore, surgeAdmitsBefore)
	if lagging {
		// The replica stops reading, and its master drops it: nothing written from
		// now on reaches it.
		replica.Pause()
		if _, err := master.Do("CLIENT", "KILL", "TYPE", "replica"); err != nil {
			replica.Resume()
			t.Fatalf("dropping the replica's link: %v", err)
		}
		g.phase.Store(phaseLagging)
		g.waitFor(t, phaseLagging, surgeJoinsLagging, surgeAdmitsLag)
	}
	master.Stop() // SIGKILL, no WAIT
	g.phase.Store(phaseKilled)
	if lagging {
		replica.Resume()
	}

	// The replica takes over (Redis Cluster's business: a harness bound, not a measure),
	// then the room must answer within a few calls.
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := replica.Do("INFO", "replication")
		if err == nil && strings.Contains(info, "role:master") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica was not promoted: %v %s\n%s", err, info, replica.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	calls := 0
	for {
		calls++
		_, err := s.Stats(ctx)
		if err == nil {
			break
		}
		if calls == callsAfterPromotion {
			t.Fatalf("the room did not answer in %d calls once the replica was master: %v", calls, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	g.phase.Store(phaseAnswered)
	halt()
	lost := countLost(t, g, lagging)

	// The surge goes on against the new master, a session's life later.
	g.skip.Store(int64(g.lim.SessionTTL + time.Minute))
	start()
	g.waitFor(t, phaseAnswered, surgeJoinsAfter, surgeAdmitsAfter)
	halt()
	checkAfterFailover(t, g, replica, calls, lost)
}

// lost is what the failover lost, by what each visitor had last been told.
type lost struct {
	told, tickets, admissions, joinAdmissions int
	// leaves lost: the visitor left, and the store still holds their slot (left after
	// an admission it has), or their place (admitted and left within what was lost)
	leavesActive, leavesQueued int
	ticketList                 []uint64
	queued, admitted           []queue.VisitorID
}

func countLost(t *testing.T, g *surge, lagging bool) lost {
	ctx := context.Background()
	last := map[queue.VisitorID]ack{}
	for _, a := range g.acks {
		last[a.id] = a
	}
	var l lost
	for id, a := range last {
		if a.ackAt >= phaseKilled {
			continue // told by the new master
		}
		l.told++
		st, err := g.s.Status(ctx, id, g.now())
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case a.kind == "join" && a.st.State == queue.Queued && st.State == queue.Unknown:
			l.tickets++
			l.ticketList = append(l.ticketList, a.st.Ticket)
			l.queued = append(l.queued, id)
		case a.kind == "admit" && st.State == queue.Queued:
			l.admissions++ // back in the line, at its old place
			l.admitted = append(l.admitted, id)
		case a.kind == "join" && a.st.State == queue.Admitted && st.State == queue.Unknown:
			l.joinAdmissions++
			l.admitted = append(l.admitted, id)
		case a.kind == "leave" && st.State == queue.Admitted:
			l.leavesActive++ // a slot held by nobody, until session_ttl
		case a.kind == "leave" && st.State == queue.Queued:
			l.leavesQueued++ // at the head again: a step will give them a slot nobody uses
		}
	}
	// A visitor whose admission was lost: their admitted cookie's id holds no slot
	// (Touch: false), so the handler takes them for a new visitor.
	for _, id := range l.admitted {
		if ok, err := g.s.Touch(ctx, id, g.now()); err != nil || ok {
			t.Fatalf("a visitor whose admission was lost touches: %v %v", ok, err)
		}
	}
	joinsL, admitsL := g.counts(phaseLagging)
	if lagging && l.tickets+l.admissions+l.joinAdmissions == 0 {
		t.Errorf("the replica lagged by %d joins and %d admissions, and nothing was lost: the fault was not injected", joinsL, admitsL)
	}
	return l
}

func checkAfterFailover(t *testing.T, g *surge, newMaster *testredis.Server, calls int, l lost) {
	ctx := context.Background()
	s := g.s
	if g.samples < surgeAdmitsBefore {
		t.Fatalf("only %d capacity samples", g.samples)
	}
	if len(g.over) > 0 {
		t.Errorf("the store held more than capacity %d in %d of %d samples (phase: active): %v", g.lim.Capacity, len(g.over), g.samples, g.over[:min(5, len(g.over))])
	}

	// What the store holds now, read directly from the new master.
	rdb := redis.NewClient(&redis.Options{Addr: newMaster.Addr})
	defer rdb.Close()
	queued, err := rdb.ZRangeWithScores(ctx, s.keys[0], 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	active, err := rdb.ZRange(ctx, s.keys[1], 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(active) > g.lim.Capacity {
		t.Errorf("the promoted replica holds %d active with capacity %d", len(active), g.lim.Capacity)
	}
	inside := map[string]bool{}
	for _, id := range active {
		inside[id] = true
	}
	for _, z := range queued {
		if inside[z.Member.(string)] {
			t.Errorf("visitor %x is both admitted and queued", z.Member)
		}
	}

	// The survivors' positions: exact and dense, in ticket order (ZRANGE's order), as
	// Status and Positions tell them.
	tickets := make([]uint64, len(queued))
	for i, z := range queued {
		var id queue.VisitorID
		copy(id[:], z.Member.(string))
		st, err := s.Status(ctx, id, g.now())
		if err != nil {
			t.Fatal(err)
		}
		if st.State != queue.Queued || st.Position != i+1 || st.Ticket != uint64(z.Score) {
			t.Fatalf("survivor %d of %d (ticket %v): %+v, want queued at %d", i+1, len(queued), z.Score, st, i+1)
		}
		tickets[i] = st.Ticket
	}
	positions := make([]int, len(tickets))
	if err := s.Positions(ctx, tickets, positions); err != nil {
		t.Fatal(err)
	}
	for i, p := range positions {
		if p != i+1 {
			t.Fatalf("Positions of survivor %d: %d", i+1, p)
		}
	}
	stats, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Waiting != len(queued) || stats.Active != len(active) {
		t.Errorf("Stats %+v, but the store holds %d queued and %d active", stats, len(queued), len(active))
	}

	// Every ticket handed out: to one visitor each, and those after the failover above
	// those before it.
	holder := map[uint64]queue.VisitorID{}
	var maxBefore, minAfter uint64
	var reused []uint64
	for _, a := range g.acks {
		if a.kind != "join" || a.st.State != queue.Queued {
			continue
		}
		if other, ok := holder[a.st.Ticket]; ok && other != a.id {
			reused = append(reused, a.st.Ticket)
		}
		holder[a.st.Ticket] = a.id
		switch {
		case a.ackAt < phaseKilled:
			maxBefore = max(maxBefore, a.st.Ticket)
		case a.sentAt >= phaseKilled && (minAfter == 0 || a.st.Ticket < minAfter):
			minAfter = a.st.Ticket
		}
	}
	if len(reused) > 0 {
		t.Errorf("%d tickets were handed to two visitors after the failover (e.g. %v): a visitor whose ticket was lost is told a newcomer's place", len(reused), reused[:min(5, len(reused))])
	}
	if minAfter <= maxBefore {
		t.Errorf("the first ticket after the failover is %d, not above the last one handed out before it, %d", minAfter, maxBefore)
	}

	// A lost ticket names nobody's place now, and never a newcomer's.
	if len(l.ticketList) > 0 {
		out := make([]int, len(l.ticketList))
		if err := s.Positions(ctx, l.ticketList, out); err != nil {
			t.Fatal(err)
		}
		if i := slices.IndexFunc(out, func(p int) bool { return p != 0 }); i >= 0 {
			t.Errorf("lost ticket %d has position %d after the failover: someone else's place", l.ticketList[i], out[i])
		}
	}
	joinsB, admitsB := g.counts(phaseSynced)
	joinsL, admitsL := g.counts(phaseLagging)
	joinsA, admitsA := g.counts(phaseAnswered)
	t.Logf("acknowledged: %d joins and %d admissions before the kill (%d and %d of them while the replica lagged), %d and %d after the failover; %d calls failed during it; the room answered on call %d after the promotion",
		joinsB+joinsL, admitsB+admitsL, joinsL, admitsL, joinsA, admitsA, g.failed.Load(), calls)
	t.Logf("lost, of %d visitors told something by the old master: %d tickets (told a position, now unknown), %d admissions from the line (told to come in, back at their old place in the line), %d admissions at arrival (let in, now unknown), %d leaves (left, still holding a slot) and %d whole visits (admitted and left, queued again at the head); the first ticket after the failover is %d, the last before it %d; the store holds %d active (capacity %d) and %d queued, in %d capacity samples",
		l.told, l.tickets, l.admissions, l.joinAdmissions, l.leavesActive, l.leavesQueued, minAfter, maxBefore, len(active), g.lim.Capacity, len(queued), g.samples)
	// What a visitor whose place was lost meets: their cookie names an id the store no
	// longer knows (Status: unknown), so the handler joins them anew, at the back.
	if len(l.queued) > 0 {
		id := l.queued[0]
		if st, err := s.Status(ctx, id, g.now()); err != nil || st.State != queue.Unknown {
			t.Fatalf("a visitor whose ticket was lost: %+v %v", st, err)
		}
		before, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.Join(ctx, queue.NewVisitorID(), g.now(), g.lim)
		if err != nil || st.State != queue.Queued || st.Position != before.Waiting+1 || st.Ticket <= maxBefore {
			t.Fatalf("joining again after a lost ticket: %+v %v; %d were waiting, the last ticket before the failover %d", st, err, before.Waiting, maxBefore)
		}
		t.Logf("a visitor whose ticket was lost joins again at the back: position %d of %d, ticket %d", st.Position, st.Waiting, st.Ticket)
	}
}
