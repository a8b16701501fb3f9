package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/draw"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// A room's draws (docs/fairness.md): the commitment is first-offer-wins and never
// replaced, the close takes the entrants at one instant, the order goes into the line
// a chunk at a time, a random draw's picks are taken in their order; and every
// admission is counted under its reason.

// drawRecord is an open draw of id, as an instance would offer it: committed at t0.
func drawRecord(id, lottery string) queue.DrawRecord {
	var key [32]byte
	copy(key[:], id)
	return queue.DrawRecord{ID: id, Lottery: lottery, Seed: draw.NewSeed(), EntryKey: key,
		Committed: t0.Truncate(time.Second), PublicKey: "key-of-" + id}
}

func (r room) commit(rec queue.DrawRecord) queue.DrawRecord {
	r.t.Helper()
	got, err := r.s.CommitDraw(context.Background(), rec)
	if err != nil {
		r.t.Fatalf("CommitDraw(%s): %v", rec.ID, err)
	}
	return got
}

func (r room) closeDraw(id string) queue.DrawRecord {
	r.t.Helper()
	got, err := r.s.CloseDraw(context.Background(), id)
	if err != nil {
		r.t.Fatalf("CloseDraw(%s): %v", id, err)
	}
	return got
}

func (r room) entrants(id string) []uint64 {
	r.t.Helper()
	got, err := r.s.DrawEntrants(context.Background(), id, nil)
	if err != nil {
		r.t.Fatalf("DrawEntrants(%s): %v", id, err)
	}
	return got
}

func (r room) place(id string, done int, from ...uint64) queue.DrawRecord {
	r.t.Helper()
	got, err := r.s.PlaceDraw(context.Background(), id, done, from)
	if err != nil {
		r.t.Fatalf("PlaceDraw(%s, %d): %v", id, done, err)
	}
	return got
}

func (r room) present() []uint64 {
	r.t.Helper()
	got, err := r.s.Present(context.Background(), nil)
	if err != nil {
		r.t.Fatalf("Present: %v", err)
	}
	return got
}

// sameDraw compares what a commit fixes: the id, seed, entry key, time and key.
func sameDraw(a, b queue.DrawRecord) bool {
	return a.ID == b.ID && a.Seed == b.Seed && a.EntryKey == b.EntryKey && a.Committed.Equal(b.Committed) &&
		a.PublicKey == b.PublicKey && a.Lottery == b.Lottery
}

// The first commit wins: a second offer, of the same id with another seed or of
// another id, gets the first back while it is not drawn, from any store call; the
// lottery it names is drawn for Shuffle. Once drawn, a new draw may be committed, but
// never one of an id the store holds.
func testDrawCommitFirstOfferWins(t *testing.T, open Open) {
	r := newRoom(t, open)
	ctx := context.Background()
	if _, ok, err := r.s.Draw(ctx, ""); err != nil || ok {
		t.Fatalf("Draw of a room that never drew: %v, %v", ok, err)
	}
	first := drawRecord("event-2031-03-14T16:00:00Z", "2031-03-14T16:00:00Z")
	got := r.commit(first)
	if !sameDraw(got, first) || got.State != queue.DrawOpen {
		t.Fatalf("the first commit gave %+v", got)
	}
	again := drawRecord(first.ID, first.Lottery)
	other := drawRecord("event-2031-03-15T16:00:00Z", "2031-03-15T16:00:00Z")
	for _, offer := range []queue.DrawRecord{again, other} {
		if got := r.commit(offer); !sameDraw(got, first) {
			t.Fatalf("a second offer (%s) while the first is open replaced it: seed %s, want %s", offer.ID, got.Seed, first.Seed)
		}
	}
	for _, id := range []string{"", first.ID} {
		if rec, ok, err := r.s.Draw(ctx, id); err != nil || !ok || !sameDraw(rec, first) {
			t.Fatalf("Draw(%q) = %+v, %v, %v", id, rec, ok, err)
		}
	}
	if _, ok, err := r.s.Draw(ctx, other.ID); err != nil || ok {
		t.Fatalf("Draw of the refused offer: %v, %v", ok, err)
	}
	if ok, err := r.s.Shuffle(ctx, first.Lottery); err != nil || ok {
		t.Fatalf("Shuffle of a committed event's lottery = %v, %v; want false: never drawn twice", ok, err)
	}
	if rec := r.closeDraw(first.ID); rec.State != queue.DrawDrawn || rec.Entrants != 0 {
		t.Fatalf("closing a draw of nobody: %+v, want drawn at once", rec)
	}
	if got := r.commit(again); !sameDraw(got, first) {
		t.Fatalf("an offer of a drawn draw's id replaced it")
	}
	if got := r.commit(other); !sameDraw(got, other) || got.State != queue.DrawOpen {
		t.Fatalf("a new draw after the last was drawn: %+v", got)
	}
	if rec, ok, err := r.s.Draw(ctx, first.ID); err != nil || !ok || !sameDraw(rec, first) || rec.State != queue.DrawDrawn {
		t.Fatalf("the drawn draw by its id: %+v, %v, %v", rec, ok, err)
	}
}

// The close takes the ordinary lane's places held then, present and away, and no pass
// holder; a later leave does not change them, a second close changes nothing, and a
// later arrival is behind the block the order goes to.
func testDrawCloseTakesTheHeldPlaces(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := awayLimits(1)
	lim.Hold = true
	rec := r.commit(drawRecord("event-a", "a"))
	ids, tickets := r.queueShown(6, t0, lim)
	lane, _, ok := r.joinPass(newPass(1), t0, lim)
	if !ok {
		t.Fatal("the pass was refused")
	}
	// ids[1] goes away; ids[4] leaves before the close.
	r.heartbeat(t0.Add(90*time.Second), append(slices.Delete(slices.Clone(ids), 1, 2), lane)...)
	r.step(t0.Add(90*time.Second), lim)
	if st := r.stats(); st.Away != 1 {
		t.Fatalf("away = %d, want 1", st.Away)
	}
	r.leave(ids[4])
	want := slices.Delete(slices.Clone(tickets), 4, 5)
	closed := r.closeDraw(rec.ID)
	if closed.State != queue.DrawClosed || closed.Entrants != 5 {
		t.Fatalf("closed: %+v, want closed with 5 entrants", closed)
	}
	if got := r.entrants(rec.ID); !slices.Equal(got, want) {
		t.Fatalf("entrants %v, want the held ordinary tickets %v", got, want)
	}
	r.leave(ids[0])
	if again := r.closeDraw(rec.ID); again.Close != closed.Close || again.First != closed.First || again.State != queue.DrawClosed {
		t.Fatalf("a second close: %+v, want %+v", again, closed)
	}
	if got := r.entrants(rec.ID); !slices.Equal(got, want) {
		t.Fatalf("entrants after a leave %v, want %v", got, want)
	}
	_, st := r.join(t0.Add(91*time.Second), lim)
	if st.Ticket <= closed.First+uint64(closed.Entrants) {
		t.Fatalf("an arrival after the close has ticket %d, inside the order's block %d..%d", st.Ticket, closed.First+1, closed.First+uint64(closed.Entrants))
	}
	if _, err := r.s.DrawEntrants(context.Background(), "no-such-draw", nil); err == nil {
		t.Fatal("DrawEntrants of a draw the store does not hold: no error")
	}
}

// The order goes into the line a chunk at a time: place p is ticket First+p, the
// waiter away stays away, the one who left leaves a hole, a place handed to another
// device goes with its new holder, and the admissions then follow the order. A chunk
// asked for at the wrong point moves nothing.
func testDrawPlacesTheOrder(t *testing.T, open Open) {
	for _, chunk := range []int{1, 3, 100} {
		t.Run(fmt.Sprintf("chunk=%d", chunk), func(t *testing.T) {
			r := newRoom(t, open)
			lim := awayLimits(1)
			holder := r.fill(t0, lim)
			lim.Hold = true
			rec := r.commit(drawRecord("event-b", "b"))
			ids, tickets := r.queueShown(9, t0, lim)
			later := t0.Add(90 * time.Second)
			r.heartbeat(later, append(slices.Delete(slices.Clone(ids), 2, 3), ids[2:2]...)...)
			r.step(later, lim) // ids[2] goes away
			closed := r.closeDraw(rec.ID)
			entrants := r.entrants(rec.ID)
			if !slices.Equal(entrants, tickets) {
				t.Fatalf("entrants %v, want %v", entrants, tickets)
			}
			order := slices.Clone(entrants)
			rand.New(rand.NewPCG(uint64(chunk), 7)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			byTicket := map[uint64]queue.VisitorID{}
			for i, t := range tickets {
				byTicket[t] = ids[i]
			}
			// One leaves, one hands its place to another device: two of those present.
			var hole, handed int
			for p := range order {
				if order[p] != tickets[2] {
					hole, handed = handed, p
				}
			}
			r.leave(byTicket[order[hole]])
			moved := queue.NewVisitorID()
			if _, ok, err := r.s.Move(context.Background(), byTicket[order[handed]], moved, later, lim); err != nil || !ok {
				t.Fatalf("Move: %v, %v", ok, err)
			}
			byTicket[order[handed]] = moved
			if got := r.place(rec.ID, 1, order[:1]...); got.Done != 0 {
				t.Fatalf("a chunk at the wrong point placed: %+v", got)
			}
			for done := 0; done < len(order); done += chunk {
				got := r.place(rec.ID, done, order[done:min(done+chunk, len(order))]...)
				if want := min(done+chunk, len(order)); got.Done != want {
					t.Fatalf("after placing %d: done %d, want %d", done, got.Done, want)
				}
			}
			final, _, _ := r.s.Draw(context.Background(), rec.ID)
			if final.State != queue.DrawDrawn {
				t.Fatalf("after the last place: %+v, want drawn", final)
			}
			if st := r.stats(); st.Away != 1 || st.Waiting != 7 {
				t.Fatalf("after the draw: %+v, want 7 waiting and the one away", st)
			}
			if got, want := r.present(), closed.First+uint64(slices.Index(order, tickets[0])+1); !slices.Contains(got, want) {
				t.Fatalf("present %v, want the first arrival at its drawn ticket %d", got, want)
			}
			// A status hears the one away too: from here on everyone is present.
			for p, t0ticket := range order {
				id := byTicket[t0ticket]
				st := r.listen(id, later)
				switch {
				case p == hole:
					if st.State != queue.Unknown {
						t.Fatalf("the waiter who left is %v", st.State)
					}
				case st.State != queue.Queued || st.Ticket != closed.First+uint64(p+1):
					t.Fatalf("place %d: %+v, want queued at ticket %d", p+1, st, closed.First+uint64(p+1))
				}
			}
			// The line goes in by the order, passing over the hole.
			lim.Hold, lim.Capacity = false, 8
			r.leave(holder[0])
			var want []queue.VisitorID
			for p, tk := range order {
				if p != hole {
					want = append(want, byTicket[tk])
				}
			}
			wantIDs(t, "admissions after the draw", r.step(later, lim), want)
		})
	}
}

// Present lists the ordinary lane's present waiters: not the away, not the pass lane.
func testPresentListsTheLine(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := awayLimits(1)
	r.fill(t0, lim)
	ids, tickets := r.queueShown(5, t0, lim)
	if _, _, ok := r.joinPass(newPass(1), t0, lim); !ok {
		t.Fatal("the pass was refused")
	}
	if got := r.present(); !slices.Equal(got, tickets) {
		t.Fatalf("Present = %v, want %v", got, tickets)
	}
	r.heartbeat(t0.Add(90*time.Second), ids[0], ids[2], ids[4])
	r.step(t0.Add(90*time.Second), lim)
	if got, want := r.present(), []uint64{tickets[0], tickets[2], tickets[4]}; !slices.Equal(got, want) {
		t.Fatalf("Present with two away = %v, want %v", got, want)
	}
}

// A committed random draw's picks: the pass lane first, then the first present picks
// in their order (never one away, never one not picked), each recorded as an entrant;
// the close takes them and the line as the draw's entrants, and is drawn at once. Once
// the draw is closed its picks admit nobody.
func testRandomDrawTakesThePicksInOrder(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := awayLimits(2)
	holders := r.fill(t0, lim)
	rec := r.commit(drawRecord("random-2031-03-14T15:09:26Z", ""))
	ids, tickets := r.queueShown(8, t0, lim)
	lane, _, ok := r.joinPass(newPass(1), t0, lim)
	if !ok {
		t.Fatal("the pass was refused")
	}
	later := t0.Add(90 * time.Second)
	r.heartbeat(later, append(slices.Delete(slices.Clone(ids), 6, 7), lane)...)
	r.step(later, lim) // ids[6] goes away
	lim.Random = true
	lim.Picks = &queue.Picks{Draw: rec.ID, Tickets: []uint64{tickets[6], tickets[3], tickets[7], tickets[0], tickets[1]}}
	r.leave(holders[0])
	r.leave(holders[1])
	lim.Capacity = 3
	res := r.stepResult(later, lim)
	wantIDs(t, "the pass lane, then the first present picks", res.Admitted, []queue.VisitorID{lane, ids[3], ids[7]})
	if res.ByReason[queue.ReasonPass] != 1 || res.ByReason[queue.ReasonRandom] != 2 {
		t.Fatalf("by reason %v, want 1 pass and 2 random", res.ByReason)
	}
	lim.Capacity = 5
	lim.Picks.Tickets = lim.Picks.Tickets[3:4]
	wantIDs(t, "the one pick left that is present", r.step(later, lim), []queue.VisitorID{ids[0]})
	closed := r.closeDraw(rec.ID)
	if closed.State != queue.DrawDrawn {
		t.Fatalf("a random draw closed: %+v, want drawn", closed)
	}
	if got, want := r.entrants(rec.ID), slices.Sorted(slices.Values(tickets)); !slices.Equal(got, want) {
		t.Fatalf("entrants %v, want the picks and the line %v", got, want)
	}
	lim.Picks.Tickets = []uint64{tickets[1], tickets[2]}
	if got := r.step(later, lim); len(got) != 0 {
		t.Fatalf("the picks of a closed draw admitted %v", got)
	}
}

// Every admission is counted under one reason, a minute at a time: at once into an
// empty room and from the head of the line in order, a pass, the admin's admit, a
// waiter back after the line passed it, a session handed to another device; only
// under Limits.Reasons. The reasons but handoff add up to the admissions.
func testAdmissionsByReason(t *testing.T, open Open) {
	r := newRoom(t, open)
	ctx := context.Background()
	lim := awayLimits(2)
	lim.Reasons = true
	first := r.fill(t0, lim) // 2 in order, at once
	ids, _ := r.queueShown(4, t0, lim)
	if _, _, ok := r.joinPass(newPass(1), t0, lim); !ok {
		t.Fatal("the pass was refused")
	}
	r.leave(first[0])
	res := r.stepResult(t0, lim) // the pass holder
	if res.ByReason[queue.ReasonPass] != 1 || len(res.Admitted) != 1 {
		t.Fatalf("a pass holder let in: %+v", res)
	}
	// ids[0] goes away; the line passes it.
	at := t0.Add(2 * time.Minute)
	r.heartbeat(t0.Add(time.Minute), ids[1:]...)
	r.heartbeat(at, ids[1:]...)
	r.step(at, lim)
	r.leave(first[1])
	res = r.stepResult(at, lim)
	wantIDs(t, "past the one away", res.Admitted, ids[1:2])
	if res.ByReason[queue.ReasonInOrder] != 1 {
		t.Fatalf("by reason %v, want 1 in order", res.ByReason)
	}
	if st := r.status(ids[0], at); !st.Returned || st.Position != 1 {
		t.Fatalf("back after the line passed: %+v", st)
	}
	at = at.Add(30 * time.Second)
	adm, err := r.s.AdmitNow(ctx, 2, at, lim)
	if err != nil || adm.ByReason[queue.ReasonAdmin] != 2 || len(adm.Admitted) != 2 {
		t.Fatalf("AdmitNow(2): %+v, %v; want 2 by the admin", adm, err)
	}
	wantIDs(t, "the admin's admit", adm.Admitted, []queue.VisitorID{ids[0], ids[2]})
	// A session moved to another device, then the last waiter back in order.
	if _, ok, err := r.s.Move(ctx, ids[1], queue.NewVisitorID(), at, lim); err != nil || !ok {
		t.Fatalf("Move: %v, %v", ok, err)
	}
	r.leave(ids[0])
	r.leave(ids[2])
	lim.Capacity = 4
	at = at.Add(90 * time.Second)
	r.heartbeat(at.Add(-30*time.Second), ids[3])
	res = r.stepResult(at, lim)
	if res.ByReason[queue.ReasonInOrder] != 1 || len(res.Admitted) != 1 {
		t.Fatalf("the last waiter: %+v", res)
	}
	// Without Reasons, nothing more is counted.
	lim.Reasons = false
	r.join(at, lim)

	minutes, err := r.s.Admissions(ctx, t0, at.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var total queue.ByReason
	for _, m := range minutes {
		if m.At.Second() != 0 || m.ByReason == (queue.ByReason{}) {
			t.Fatalf("a minute of the admissions: %+v", m)
		}
		for i, n := range m.ByReason {
			total[i] += n
		}
	}
	// In order: the two at once and ids[1], ids[3]; returned: none (the admin's
	// admit took ids[0]); the hand-off beside them.
	want := queue.ByReason{queue.ReasonInOrder: 4, queue.ReasonPass: 1, queue.ReasonHandoff: 1, queue.ReasonAdmin: 2}
	if total != want {
		t.Fatalf("admissions by reason %v, want %v", total, want)
	}
	st := r.stats()
	if sum := total[queue.ReasonInOrder] + total[queue.ReasonPass] + total[queue.ReasonReturned] +
		total[queue.ReasonAdmin] + total[queue.ReasonRandom]; sum+1 != st.AdmittedTotal {
		t.Fatalf("the reasons but handoff add up to %d, the room admitted %d (one without Reasons)", sum, st.AdmittedTotal)
	}
	if len(minutes) < 2 || !minutes[0].At.Before(minutes[len(minutes)-1].At) {
		t.Fatalf("minutes %v, want several, oldest first", minutes)
	}
	if got, _ := r.s.Admissions(ctx, at.Add(10*time.Minute), at.Add(11*time.Minute)); len(got) != 0 {
		t.Fatalf("admissions of minutes with none: %v", got)
	}
}

// In FIFO, against a model of the line through many random steps: each step admits
// the lowest present tickets, the pass lane first; each admission from the ordinary
// lane is in order unless the line had passed its ticket (returned); and the counts
// by reason are the model's.
func testFIFOReasonsMatchModel(t *testing.T, open Open) {
	r := newRoom(t, open)
	rng := rand.New(rand.NewPCG(43, 43))
	lim := awayLimits(3)
	lim.Reasons, lim.SessionTTL = true, time.Hour
	holders := r.fill(t0, lim)
	type waiter struct {
		id     queue.VisitorID
		ticket uint64
		pass   bool
		heard  time.Time
	}
	var line []*waiter
	now := t0
	var high uint64
	for round := range 40 {
		for range rng.IntN(4) {
			w := &waiter{heard: now}
			var st queue.Status
			if rng.IntN(5) == 0 {
				var ok bool
				if w.id, st, ok = r.joinPass(newPass(1), now, lim); !ok {
					t.Fatalf("round %d: a pass refused", round)
				}
				w.pass = true
			} else {
				w.id, st = r.join(now, lim)
			}
			if st.State == queue.Admitted { // at once, into a room with nobody present waiting
				holders = append(holders, w.id)
				continue
			}
			w.ticket = st.Ticket
			r.status(w.id, now)
			line = append(line, w)
		}
		now = now.Add(20 * time.Second)
		for _, w := range line { // most keep their page; some go quiet a while
			if rng.IntN(6) != 0 {
				r.heartbeat(now, w.id)
				w.heard = now
			}
		}
		if rng.IntN(4) == 0 && len(holders) > 0 {
			r.leave(holders[0])
			holders = holders[1:]
		}
		// The model: who is present, and the step's picks.
		var present []*waiter
		for _, w := range line {
			if now.Sub(w.heard) < lim.QueueTTL {
				present = append(present, w)
			}
		}
		slices.SortFunc(present, func(a, b *waiter) int {
			switch {
			case a.pass != b.pass && a.pass:
				return -1
			case a.pass != b.pass:
				return 1
			}
			return int(a.ticket) - int(b.ticket)
		})
		active := r.stats().Active
		free := min(lim.Capacity-active, len(present))
		var wantAdmitted []queue.VisitorID
		var wantBy queue.ByReason
		for _, w := range present[:max(free, 0)] {
			wantAdmitted = append(wantAdmitted, w.id)
			switch {
			case w.pass:
				wantBy[queue.ReasonPass]++
			case w.ticket < high:
				wantBy[queue.ReasonReturned]++
			default:
				wantBy[queue.ReasonInOrder]++
				high = w.ticket
			}
		}
		res := r.stepResult(now, lim)
		wantIDs(t, fmt.Sprintf("round %d: admitted", round), res.Admitted, wantAdmitted)
		if res.ByReason != wantBy {
			t.Fatalf("round %d: by reason %v, want %v", round, res.ByReason, wantBy)
		}
		line = slices.DeleteFunc(line, func(w *waiter) bool { return slices.Contains(res.Admitted, w.id) })
		for _, id := range res.Admitted {
			if rng.IntN(2) == 0 {
				r.leave(id)
			} else {
				holders = append(holders, id)
			}
		}
	}
}
