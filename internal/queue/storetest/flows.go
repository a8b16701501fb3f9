package storetest

import (
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

func testJoinAdmitsWhileSlotsFree(t *testing.T, open Open) {
	tests := []struct {
		capacity, joins int
	}{
		{capacity: 1, joins: 1},
		{capacity: 1, joins: 4},
		{capacity: 3, joins: 2},
		{capacity: 3, joins: 7},
	}
	for _, tc := range tests {
		r := newRoom(t, open)
		lim := limits(tc.capacity)
		var lastTicket uint64
		for i := range tc.joins {
			_, st := r.join(t0, lim)
			if i < tc.capacity {
				if st.State != queue.Admitted {
					t.Fatalf("capacity %d, join %d: %v, want admitted", tc.capacity, i+1, st.State)
				}
				continue
			}
			wantPos := i - tc.capacity + 1
			if st.State != queue.Queued || st.Position != wantPos || st.Ticket <= lastTicket {
				t.Fatalf("capacity %d, join %d: %+v, want queued at position %d with a ticket above %d",
					tc.capacity, i+1, st, wantPos, lastTicket)
			}
			lastTicket = st.Ticket
		}
		admitted := min(tc.capacity, tc.joins)
		r.wantStats(queue.Stats{Active: admitted, Waiting: tc.joins - admitted, AdmittedTotal: uint64(admitted)})
	}
}

// A free slot does not let a newcomer jump the queue: it belongs to the head, and the
// next Step gives it to the head.
func testJoinQueuesBehindWaiters(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(1)
	active := r.fill(t0, lim)
	head, _ := r.queue(1, t0, lim)
	if !r.leave(active[0]) {
		t.Fatal("Leave of an admitted visitor reported false")
	}
	late, st := r.join(t0, lim)
	if st.State != queue.Queued || st.Position != 2 {
		t.Fatalf("join with a free slot but a waiter ahead: %+v, want queued at position 2", st)
	}
	wantIDs(t, "Step admitted", r.step(t0, lim), head)
	r.wantState(late, t0, queue.Queued)
}

func testJoinIsIdempotent(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(1)
	active := r.fill(t0, lim)
	waiters, tickets := r.queue(2, t0, lim)

	if st := r.joinID(active[0], t0, lim); st.State != queue.Admitted {
		t.Fatalf("join of an admitted visitor: %v, want admitted", st.State)
	}
	for i, id := range waiters {
		st := r.joinID(id, t0, lim)
		if st.State != queue.Queued || st.Ticket != tickets[i] || st.Position != i+1 {
			t.Fatalf("join of waiter %d again: %+v, want queued with ticket %d at position %d",
				i, st, tickets[i], i+1)
		}
	}
	r.wantStats(queue.Stats{Active: 1, Waiting: 2, AdmittedTotal: 1})
}

func testTicketsFollowArrival(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(1)
	r.fill(t0, lim)
	ids, tickets := r.queue(50, t0, lim)
	for i := 1; i < len(tickets); i++ {
		if tickets[i] <= tickets[i-1] {
			t.Fatalf("ticket %d = %d is not above ticket %d = %d", i, tickets[i], i-1, tickets[i-1])
		}
	}
	for i, id := range ids {
		if st := r.wantState(id, t0, queue.Queued); st.Ticket != tickets[i] || st.Position != i+1 {
			t.Fatalf("Status of waiter %d = %+v, want ticket %d position %d", i, st, tickets[i], i+1)
		}
	}
}

func testStatus(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(2)
	active := r.fill(t0, lim)
	waiters, tickets := r.queue(3, t0, lim)
	r.wantState(active[1], t0, queue.Admitted)
	r.wantState(queue.NewVisitorID(), t0, queue.Unknown)
	if st := r.status(waiters[2], t0); st != (queue.Status{State: queue.Queued, Ticket: tickets[2], Position: 3, Active: 2, Waiting: 3}) {
		t.Fatalf("Status of the third waiter = %+v", st)
	}
	// Asking about a stranger must not make them known.
	r.wantStats(queue.Stats{Active: 2, Waiting: 3, AdmittedTotal: 2})
}

func testTouch(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(1)
	v := r.fill(t0, lim)[0]
	waiter, _ := r.queue(1, t0, lim)

	if r.touch(queue.NewVisitorID(), t0) {
		t.Fatal("Touch of an unknown visitor reported true")
	}
	if r.touch(waiter[0], t0) {
		t.Fatal("Touch of a waiter reported true")
	}
	// Touched at 4m, the session lasts until 9m although it began at 0.
	if !r.touch(v, t0.Add(4*time.Minute)) {
		t.Fatal("Touch of an admitted visitor reported false")
	}
	r.heartbeat(t0.Add(8*time.Minute), waiter...)
	if got := r.step(t0.Add(8*time.Minute), lim); len(got) != 0 {
		t.Fatalf("Step admitted %v while the touched visitor holds the only slot", got)
	}
	r.wantState(v, t0.Add(8*time.Minute), queue.Admitted)
	r.heartbeat(t0.Add(9*time.Minute+time.Second), waiter...)
	r.step(t0.Add(9*time.Minute+time.Second), lim)
	if r.touch(v, t0.Add(9*time.Minute+2*time.Second)) {
		t.Fatal("Touch of an expired session reported true")
	}
	r.wantState(v, t0.Add(9*time.Minute+2*time.Second), queue.Unknown)
}

func testSessionExpiryFreesSlot(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(2)
	active := r.fill(t0, lim)
	waiters, _ := r.queue(3, t0, lim)

	// Only active[1] makes requests; active[0] goes quiet.
	later := t0.Add(lim.SessionTTL - time.Second)
	r.touch(active[1], later)
	r.heartbeat(later, waiters...)
	if got := r.step(later, lim); len(got) != 0 {
		t.Fatalf("Step before the session TTL admitted %v", got)
	}
	expired := t0.Add(lim.SessionTTL + time.Second)
	r.heartbeat(expired, waiters...)
	wantIDs(t, "Step after the session TTL admitted", r.step(expired, lim), waiters[:1])
	r.wantState(active[0], expired, queue.Unknown)
	r.wantState(active[1], expired, queue.Admitted)
	r.wantStats(queue.Stats{Active: 2, Waiting: 2, AdmittedTotal: 3})
}

// A waiter keeps the place while heard from (Heartbeat or Status) at least every
// QueueTTL, and loses it at the first Step after QueueTTL of silence.
func testWaiterLiveness(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(1)
	active := r.fill(t0, lim)
	ids, tickets := r.queue(4, t0, lim)
	beating, polling, silent, last := ids[0], ids[1], ids[2], ids[3]

	// 25 s steps never land on the TTL itself: whether silence of exactly QueueTTL
	// still counts as alive is left to the store.
	for now := t0.Add(25 * time.Second); now.Before(t0.Add(3 * time.Minute)); now = now.Add(25 * time.Second) {
		r.touch(active[0], now)
		r.heartbeat(now, beating, last)
		r.status(polling, now)
		if got := r.step(now, lim); len(got) != 0 {
			t.Fatalf("Step admitted %v into a full room", got)
		}
		silentFor := now.Sub(t0)
		st := r.positions(tickets...)
		if silentFor < lim.QueueTTL {
			wantInts(t, "positions while the silent waiter is within its TTL", st, []int{1, 2, 3, 4})
		} else {
			wantInts(t, "positions after the silent waiter's TTL", st, []int{1, 2, 0, 3})
		}
	}
	r.wantState(silent, t0.Add(3*time.Minute), queue.Unknown)
	if st := r.wantState(last, t0.Add(3*time.Minute), queue.Queued); st.Position != 3 {
		t.Fatalf("the waiter behind the dropped one is at %d, want 3", st.Position)
	}
	r.wantStats(queue.Stats{Active: 1, Waiting: 3, AdmittedTotal: 1})
}

// Silent waiters spread through a long queue are all dropped by one Step, and the
// positions of the rest close up.
func testLivenessAcrossLongQueue(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(1)
	r.fill(t0, lim)
	ids, tickets := r.queue(1500, t0, lim)
	var beating []queue.VisitorID
	for i, id := range ids {
		if i%7 != 3 {
			beating = append(beating, id)
		}
	}
	now := t0.Add(lim.QueueTTL + time.Second)
	r.heartbeat(now, beating...)
	if got := r.step(now, lim); len(got) != 0 {
		t.Fatalf("Step admitted %v into a full room", got)
	}
	want := make([]int, len(tickets))
	pos := 0
	for i := range tickets {
		if i%7 != 3 {
			pos++
			want[i] = pos
		}
	}
	wantInts(t, "positions after silent waiters were dropped", r.positions(tickets...), want)
	if st := r.stats(); st.Waiting != len(beating) {
		t.Fatalf("Waiting = %d, want %d", st.Waiting, len(beating))
	}
}

func testDeadHeadIsSkipped(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(1)
	active := r.fill(t0, lim)
	ids, _ := r.queue(3, t0, lim)
	dead, live1, live2 := ids[0], ids[1], ids[2]

	now := t0.Add(lim.QueueTTL + time.Second)
	r.heartbeat(now, live1, live2)
	r.leave(active[0])
	wantIDs(t, "Step admitted", r.step(now, lim), []queue.VisitorID{live1})
	r.wantState(dead, now, queue.Unknown)
	if st := r.wantState(live2, now, queue.Queued); st.Position != 1 {
		t.Fatalf("remaining waiter at position %d, want 1", st.Position)
	}
}

func testLeave(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(2)
	active := r.fill(t0, lim)
	ids, tickets := r.queue(4, t0, lim)

	if r.leave(queue.NewVisitorID()) {
		t.Fatal("Leave of an unknown visitor reported true")
	}
	if !r.leave(ids[1]) {
		t.Fatal("Leave of a waiter reported false")
	}
	if r.leave(ids[1]) {
		t.Fatal("second Leave of the same waiter reported true")
	}
	r.wantState(ids[1], t0, queue.Unknown)
	wantInts(t, "positions after a waiter left", r.positions(tickets...), []int{1, 0, 2, 3})

	if !r.leave(active[0]) {
		t.Fatal("Leave of an admitted visitor reported false")
	}
	r.wantStats(queue.Stats{Active: 1, Waiting: 3, AdmittedTotal: 2})
	wantIDs(t, "Step after an admitted visitor left", r.step(t0, lim), ids[:1])
	wantInts(t, "positions after the head was admitted", r.positions(tickets...), []int{0, 0, 1, 2})
	r.wantStats(queue.Stats{Active: 2, Waiting: 2, AdmittedTotal: 3})
}

func testStepFillsFreeSlotsInTicketOrder(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(3)
	active := r.fill(t0, lim)
	ids, _ := r.queue(10, t0, lim)

	steps := []struct {
		name     string
		leave    int // admitted visitors who leave before the step
		capacity int
		want     []queue.VisitorID
	}{
		{name: "full room", capacity: 3},
		{name: "two left", leave: 2, capacity: 3, want: ids[0:2]},
		{name: "still full", capacity: 3},
		{name: "capacity raised", capacity: 6, want: ids[2:5]},
		{name: "raised beyond the queue", capacity: 100, want: ids[5:10]},
		{name: "queue empty", capacity: 100},
	}
	for _, s := range steps {
		for range s.leave {
			r.leave(active[0])
			active = active[1:]
		}
		lim.Capacity = s.capacity
		got := r.step(t0, lim)
		wantIDs(t, s.name+": Step admitted", got, s.want)
		active = append(active, got...)
		if st := r.stats(); st.Active > s.capacity || st.Active != len(active) {
			t.Fatalf("%s: Active = %d, want %d (capacity %d)", s.name, st.Active, len(active), s.capacity)
		}
	}
}

func testCapacityDecrease(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(3)
	active := r.fill(t0, lim)
	ids, _ := r.queue(2, t0, lim)

	lim.Capacity = 1
	for i, v := range active {
		if got := r.step(t0, lim); len(got) != 0 {
			t.Fatalf("Step with %d active over capacity 1 admitted %v", len(active)-i, got)
		}
		if _, st := r.join(t0, lim); st.State != queue.Queued {
			t.Fatalf("join with %d active over capacity 1: %v, want queued", len(active)-i, st.State)
		}
		r.leave(v)
	}
	wantIDs(t, "Step once active fell below capacity", r.step(t0, lim), ids[:1])
	r.wantStats(queue.Stats{Active: 1, Waiting: 4, AdmittedTotal: 4})
}

func testStats(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(2)
	r.wantStats(queue.Stats{})
	active := r.fill(t0, lim)
	ids, _ := r.queue(3, t0, lim)
	r.wantStats(queue.Stats{Active: 2, Waiting: 3, AdmittedTotal: 2})
	r.leave(active[0])
	r.leave(active[1])
	r.step(t0, lim)
	r.wantStats(queue.Stats{Active: 2, Waiting: 1, AdmittedTotal: 4})
	r.leave(ids[2])
	r.wantStats(queue.Stats{Active: 2, Waiting: 0, AdmittedTotal: 4})
	// Admitted visitors leaving never lowers the total.
	r.leave(ids[0])
	r.leave(ids[1])
	r.wantStats(queue.Stats{Active: 0, Waiting: 0, AdmittedTotal: 4})
}
