package push

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// A round lists the hub's waiters in line order, and lists them again only when the
// line changed: a waiter who came, one whose last tab closed, one reticketed by a
// lottery. A list kept too long would offer positions to the gone and miss the new.
func TestRoundListsTheLineInOrder(t *testing.T) {
	hb := New(nil, nil, 10*time.Second)
	ids := make([]queue.VisitorID, 6)
	sockets := make([]*socket, len(ids))
	for i := range ids {
		ids[i][0] = byte(i + 1)
		sockets[i] = &socket{id: ids[i]}
	}
	// Arrival order is not line order: tickets 50, 10, 40, 20, 30.
	for i, ticket := range []uint64{50, 10, 40, 20, 30} {
		hb.add(ids[i], ticket, sockets[i])
	}
	var p pushRound
	want := func(what string, tickets ...uint64) {
		t.Helper()
		p.collect(hb)
		if !slices.Equal(p.tickets, tickets) {
			t.Fatalf("%s: the round lists tickets %v, want %v", what, p.tickets, tickets)
		}
		if len(p.ids) != len(p.tickets) || len(p.positions) != len(p.tickets) || len(p.waiters) != len(p.tickets) {
			t.Fatalf("%s: %d ids, %d positions, %d waiters for %d tickets", what, len(p.ids), len(p.positions), len(p.waiters), len(p.tickets))
		}
		for i, w := range p.waiters {
			if w.ws != hb.waiters[w.id] || p.ids[i] != w.id || w.ws.ticket != w.ticket {
				t.Fatalf("%s: entry %d is not the hub's record of its waiter", what, i)
			}
		}
	}
	want("first round", 10, 20, 30, 40, 50)
	want("nothing changed", 10, 20, 30, 40, 50)

	second := &socket{id: ids[2]}
	hb.add(ids[2], 40, second) // a second tab: same waiter, same place
	want("a second tab", 10, 20, 30, 40, 50)
	hb.remove(ids[2], sockets[2])
	want("one of two tabs closed", 10, 20, 30, 40, 50)
	hb.remove(ids[2], second)
	want("the last tab closed", 10, 20, 30, 50)

	hb.add(ids[5], 5, sockets[5])
	want("a newcomer ahead of everyone (a line jump)", 5, 10, 20, 30, 50)

	hb.retick(ids[0], 1) // ticket 50 drew first place
	want("a lottery moved a waiter", 1, 5, 10, 20, 30)
	hb.retick(ids[0], 1)
	want("a lottery that changed nothing", 1, 5, 10, 20, 30)
}

// Between rounds, the resend queue writes to each socket again resendAfter after its
// last message, on the first tick after that, and to nobody else: not to a socket
// written to since (a changed position at a round restarts its wait), not to one
// that closed, and not once the store has not answered for staleAfter. Time here is the
// test's own, so each gap is exact: ticks come every resendEvery, some up to a
// quarter tick late.
func TestResendQueueWritesWhenOwedAndOnlyThen(t *testing.T) {
	tr := newTestRoom(t, 1)
	hb := New(tr, tr.store, 10*time.Second)
	const n = 50
	sockets := make([]*socket, n)
	for i := range sockets {
		var id queue.VisitorID
		id[0], id[1] = byte(i), 1
		// A socket that takes every push and writes nothing: its writer is done.
		sockets[i] = &socket{hb: hb, id: id, done: true}
		hb.add(id, uint64(i+1), sockets[i])
	}
	var p pushRound
	p.collect(hb)
	start := time.Unix(1_800_000_000, 0)
	p.answered = start
	last := make([]time.Time, n) // when each socket was last written to
	messages := make([]int, n)
	// written counts the sockets written to at now, checking each one's silence (a
	// longest of 0: nobody may be written to).
	written := func(now time.Time, shortest, longest time.Duration) (count int) {
		t.Helper()
		for i, s := range sockets {
			if s.lastOffered.Equal(last[i]) {
				continue
			}
			if longest == 0 && messages[i] > 0 {
				t.Fatalf("socket %d was written to at %v, when nobody may be", i, now)
			}
			if !s.lastOffered.Equal(now) {
				t.Fatalf("socket %d: written to at %v, not at %v", i, s.lastOffered, now)
			}
			if gap := now.Sub(last[i]); messages[i] > 0 && (gap < shortest || gap > longest) {
				t.Fatalf("socket %d was written to after %v of silence; want %v to %v", i, gap, shortest, longest)
			}
			last[i] = now
			messages[i]++
			count++
		}
		return count
	}
	// On time, a resend goes out at the first tick after it is owed.
	onTime := resendAfter + resendEvery + resendEvery/4
	if onTime > maxSilence-resendSlack+resendEvery/4 {
		t.Fatalf("an on-time resend comes after %v of silence, eating into the slack", onTime)
	}

	// The first round: everyone hears a position, as if they had arrived over 0.1 s.
	for i, w := range p.waiters {
		o := p.figures(hb, start.Add(time.Duration(i)*2*time.Millisecond))
		p.offerAll(hb, &o, w.ws, i+1)
		written(o.now, 0, 0)
	}
	rng := rand.New(rand.NewPCG(3, 5))
	storeAnswers := true
	tick := func(k int, longest time.Duration) int {
		now := start.Add(time.Duration(k)*resendEvery + time.Duration(rng.Int64N(int64(resendEvery/4))))
		if storeAnswers && k%int(pushEvery/resendEvery) == 0 {
			p.answered = now // a round's answer (its offers are the test's own, below)
		}
		p.resendDue(hb, now)
		return written(now, resendAfter, longest)
	}
	for k := 1; k <= 500; k++ {
		tick(k, onTime)
	}

	// A round at 10 s: socket 2 moves up and hears it at once; the others' positions
	// are unchanged and none is owed a resend, so nobody else hears anything.
	o := p.figures(hb, start.Add(500*resendEvery+resendEvery/2))
	for i, w := range p.waiters {
		position := i + 1
		if i == 2 {
			position = 2
		}
		p.offerAll(hb, &o, w.ws, position)
	}
	if got := written(o.now, 0, maxSilence); got != 1 || !sockets[2].lastOffered.Equal(o.now) {
		t.Fatalf("the round wrote to %d sockets; want only the one whose position changed", got)
	}
	hb.remove(sockets[1].id, sockets[1])
	closed := messages[1]

	for k := 501; k < 800; k++ {
		tick(k, onTime)
	}
	// The store stops answering. Resends go on from what it said last, until that
	// is staleAfter old; then nothing is written.
	storeAnswers = false
	k := 800
	for ; start.Add(time.Duration(k)*resendEvery).Sub(p.answered) <= staleAfter-resendEvery; k++ {
		tick(k, onTime)
	}
	stale := k + 2
	for k = stale; k < stale+100; k++ {
		if got := tick(k, 0); got != 0 {
			t.Fatalf("%d sockets were written to %v after the store's last answer", got, start.Add(time.Duration(k)*resendEvery).Sub(p.answered))
		}
	}
	// It answers again: those owed a resend meanwhile hear at once, then all is as before.
	storeAnswers = true
	p.answered = start.Add(time.Duration(k) * resendEvery)
	if got := tick(k, maxSilence+3*time.Second); got == 0 {
		t.Fatal("nobody was owed a resend after two seconds without one")
	}
	for k++; k <= 1500; k++ {
		tick(k, onTime)
	}

	if messages[1] != closed {
		t.Fatalf("a closed socket was written to %d times after it closed", messages[1]-closed)
	}
	// 30 s at one message every resendAfter to onTime, less two seconds of silence.
	least, most := int((28*time.Second)/onTime)-1, int((30*time.Second)/resendAfter)+1
	for i := 2; i < n; i++ {
		if messages[i] < least || messages[i] > most {
			t.Fatalf("socket %d heard %d messages in 30 s; want %d to %d", i, messages[i], least, most)
		}
	}
	if queued := len(p.resends) - p.head; queued > n {
		t.Fatalf("%d resends queued for %d open sockets: stale entries are kept", queued, n-1)
	}
}

// While the line moves every round, as in a sale, a waiter of a small instance hears
// every round, and one of a crowded instance hears less often: never less than every
// maxSilence and no more than the instance's change budget allows. Every message
// carries the latest position the store gave, a resend that comes before the move
// was told too. Rounds come every pushEvery and resend ticks every resendEvery, each
// up to a quarter tick late, on the test's own clock.
func TestAMovingLineIsToldWithinTheBudget(t *testing.T) {
	tr := newTestRoom(t, 1)
	for _, waiters := range []int{100, 5_000, 10_000, 17_000, 100_000} {
		hb := New(tr, tr.store, 10*time.Second)
		s := &socket{hb: hb, id: queue.VisitorID{1}, done: true} // takes every push, writes nothing
		hb.add(s.id, 1, s)
		var p pushRound
		p.collect(hb)
		p.changeGap = changeGap(waiters) // as for a hub of that many

		rng := rand.New(rand.NewPCG(uint64(waiters), 1))
		start := time.Unix(1_800_000_000, 0)
		position, last, messages := 1_000_000, start, 0
		const ticks = 3000 // 60 s
		for k := 0; k <= ticks; k++ {
			now := start.Add(time.Duration(k)*resendEvery + time.Duration(rng.Int64N(int64(resendEvery/4))))
			before := s.lastOffered
			if k%int(pushEvery/resendEvery) == 0 {
				position -= 20 // a round: twenty were admitted from the head
				o := p.figures(hb, now)
				p.answered = now
				p.offerAll(hb, &o, p.waiters[0].ws, position)
			} else {
				p.resendDue(hb, now)
			}
			if s.lastOffered.Equal(before) {
				continue
			}
			if s.lastPosition != position {
				t.Fatalf("%d waiters: a message at %v told position %d, the latest being %d", waiters, now.Sub(start), s.lastPosition, position)
			}
			if silence := now.Sub(last); k > 0 && silence > maxSilence-resendSlack+resendEvery/2 {
				t.Fatalf("%d waiters: a silence of %v", waiters, silence)
			}
			last = now
			messages++
		}
		// Every round for a small instance; for a crowded one, the budget shared out,
		// or the resends' pace where that is faster.
		perSecond := float64(messages) / (ticks * resendEvery).Seconds()
		want := max(min(1/pushEvery.Seconds(), changeBudget/float64(waiters)), 1/resendAfter.Seconds())
		if perSecond > want*1.05 || perSecond < want*0.9 {
			t.Fatalf("%d waiters: %.2f messages a second to a waiter; want %.2f", waiters, perSecond, want)
		}
	}
}
