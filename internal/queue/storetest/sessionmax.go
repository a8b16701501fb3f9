package storetest

import (
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// testSessionMaxFreesSlot: with Limits.SessionMax, a session ends that long after
// admission however often the visitor is seen, and Step gives the slot to the head of
// the line without any request from the visitor whose time ran out. Sessions admitted
// at join, by Step and by AdmitNow all end so; nobody is dropped early.
func testSessionMaxFreesSlot(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(2)
	lim.SessionMax = 2 * time.Minute
	early, st := r.join(t0, lim)
	if st.State != queue.Admitted {
		t.Fatalf("joining an empty room: %v, want admitted", st.State)
	}
	// The second slot is taken 30 s later, so the two sessions end apart.
	late := t0.Add(30 * time.Second)
	second, st := r.join(late, lim)
	if st.State != queue.Admitted {
		t.Fatalf("joining a room with a free slot: %v, want admitted", st.State)
	}
	waiters, _ := r.queue(3, late, lim)

	// Everyone stays busy: the admitted are seen every 10 s, the waiters heard.
	busy := func(now time.Time, ids ...queue.VisitorID) {
		t.Helper()
		for _, id := range ids {
			r.touch(id, now)
		}
		r.heartbeat(now, waiters...)
	}
	for now := t0.Add(10 * time.Second); now.Before(t0.Add(lim.SessionMax)); now = now.Add(10 * time.Second) {
		busy(now, early, second)
		if got := r.step(now, lim); len(got) != 0 {
			t.Fatalf("Step %v after the first admission, before session_max, admitted %v", now.Sub(t0), got)
		}
	}
	ended := t0.Add(lim.SessionMax + time.Second)
	busy(ended, early, second)
	wantIDs(t, "Step just after the first session's session_max admitted", r.step(ended, lim), waiters[:1])
	r.wantState(early, ended, queue.Unknown)
	r.wantState(second, ended, queue.Admitted)
	if r.touch(early, ended) {
		t.Fatal("Touch of a visitor past session_max reported the session alive")
	}

	// The second session ends 30 s later; the one admitted by Step in its turn.
	secondEnds := late.Add(lim.SessionMax + time.Second)
	busy(secondEnds, second, waiters[0])
	wantIDs(t, "Step after the second session's session_max admitted", r.step(secondEnds, lim), waiters[1:2])
	r.wantState(second, secondEnds, queue.Unknown)
	r.wantState(waiters[0], secondEnds, queue.Admitted)

	// An operator's AdmitNow admission ends likewise.
	res, err := r.s.AdmitNow(t.Context(), 1, secondEnds, lim)
	if err != nil {
		t.Fatalf("AdmitNow: %v", err)
	}
	wantIDs(t, "AdmitNow", res.Admitted, waiters[2:3])
	stepEnds := ended.Add(lim.SessionMax + time.Second)
	busy(stepEnds, waiters...)
	r.step(stepEnds, lim)
	r.wantState(waiters[0], stepEnds, queue.Unknown)
	forcedEnds := secondEnds.Add(lim.SessionMax + time.Second)
	busy(forcedEnds, waiters[1:]...)
	r.step(forcedEnds, lim)
	r.wantState(waiters[1], forcedEnds, queue.Unknown)
	r.wantState(waiters[2], forcedEnds, queue.Unknown)
	r.wantStats(queue.Stats{Active: 0, Waiting: 0, AdmittedTotal: 5})
}

// testSessionMaxOff: without SessionMax a visitor seen often enough keeps the slot, and
// turning SessionMax on later ends the sessions by when they were admitted, including
// those admitted while it was off.
func testSessionMaxOff(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(1)
	id := r.fill(t0, lim)[0]
	waiter, _ := r.queue(1, t0, lim)
	now := t0
	for range 30 { // an hour, seen every two minutes
		now = now.Add(2 * time.Minute)
		r.touch(id, now)
		r.heartbeat(now, waiter...)
		if got := r.step(now, lim); len(got) != 0 {
			t.Fatalf("Step without session_max admitted %v into a room held by an active visitor", got)
		}
	}
	lim.SessionMax = 30 * time.Minute
	wantIDs(t, "Step once session_max is on", r.step(now, lim), waiter)
	r.wantState(id, now, queue.Unknown)
}

// Every answer about an admitted visitor says when its session began, whoever asks
// and however it was let in: a Join admitting it at once, a Join of its id known
// already (a key's other device), Status, and a Move, which keeps the session. A
// waiter's answer says none.
func testAdmittedSaysSince(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(2)
	at := t0.Add(1500 * time.Millisecond)
	id, st := r.join(at, lim)
	if st.State != queue.Admitted || !st.Since.Equal(at) {
		t.Fatalf("join admitting at once: %+v, want admitted since %v", st, at)
	}
	later := at.Add(7 * time.Second)
	if !r.touch(id, later) {
		t.Fatal("touch: not admitted")
	}
	if st := r.status(id, later); st.State != queue.Admitted || !st.Since.Equal(at) || st.Ticket != 0 {
		t.Fatalf("status after a touch: %+v, want admitted since %v, no ticket", st, at)
	}
	if st := r.joinID(id, later, lim); !st.Known || !st.Since.Equal(at) {
		t.Fatalf("join of the known id: %+v, want known, since %v", st, at)
	}
	to := queue.NewVisitorID()
	if st, ok := r.move(id, to, later, lim); !ok || st.State != queue.Admitted || !st.Since.Equal(at) {
		t.Fatalf("move: %+v %v, want the session moved, since %v", st, ok, at)
	}
	if st := r.status(to, later); !st.Since.Equal(at) {
		t.Fatalf("status of the moved session: %+v, want since %v", st, at)
	}
	if _, st := r.join(later, lim); st.State != queue.Admitted {
		t.Fatalf("the second slot: %+v, want admitted", st)
	}
	_, q := r.join(later, lim)
	if q.State != queue.Queued || !q.Since.IsZero() {
		t.Fatalf("a waiter: %+v, want queued with no since", q)
	}
}
