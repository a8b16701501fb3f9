package saletest

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/capacity"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
)

// invariant names what the sale checks; a failure prints its name.
type invariant string

const (
	// capacityHeld: the store never holds more admitted than the capacity in force,
	// fleet-wide (after a lowering, no more than it held when the lowering came, and
	// fewer as they leave).
	capacityHeld invariant = "capacity is never exceeded, fleet-wide"
	// fifoKept: among honest waiters who never went quiet, in fifo, the one who came
	// first is let in first (Kendall τ = 1 between arrival and admission).
	fifoKept invariant = "no honest waiter is passed by a later honest arrival"
	// sessionEndHeld: once the store no longer holds a session (revoke, remove,
	// reset, session_max, session_ttl), no instance lets it in later than
	// queue.TouchEvery after it last confirmed it (docs/people-and-devices.md).
	sessionEndHeld invariant = "a revoke or session_max ends a session on every instance within queue.TouchEvery"
	// socketNeverShops: the waiting page's socket is never handed to the shop.
	socketNeverShops invariant = "a place that never makes a page request never reaches the shop"
	// socketIsNoArrival: a place admitted from the line that then only opens sockets
	// has not arrived, and gives its slot back at arrive_ttl.
	socketIsNoArrival invariant = "a place that only opens sockets gives its slot back at arrive_ttl"
	// noShowsLetTheHeadIn: while an honest waiter waits at the head of the honest
	// line, no place that never arrives gets more than two turns (its turn, and one
	// more after it missed it).
	noShowsLetTheHeadIn invariant = "no-shows cannot hold the head of the line"
	// adaptFollowsTheShop: with adapt, a period's decision raises the capacity only
	// when what the shop did, each visitor weighing at most meterPerVisitor requests
	// an instance, was within the targets, and lowers it only when it was not: a
	// flooder weighs as one visitor, and cannot outvote the rest.
	adaptFollowsTheShop invariant = "capacity moves only on what the shop itself did"
)

// noShowTurns is how many turns a no-show may have while an honest waiter waits at
// the head: its own, and the one it is kept after missing it.
const noShowTurns = 2

// watch holds what the invariants need between two checks.
type watch struct {
	// ceiling is the most admitted the store may hold: the capacity in force, or,
	// after a lowering, what it held then, coming down as they leave.
	ceiling int
	// active is what the store held admitted at the last check.
	active int
	// patched is the capacity an operator's PATCH set, for the check after it: the
	// PATCH's own admission step admits under it, and with adapt the law may lower
	// it again in that step.
	patched int
	// confirmed is when the store last held each id admitted as an instance let it
	// in; admittedIDs the same ids in the order first seen, for the operator's pick.
	confirmed   map[queue.VisitorID]time.Time
	began       map[queue.VisitorID]time.Time // when the session last confirmed began, as far as the sale saw
	admittedIDs []queue.VisitorID
	// endedBy says how and when the sale itself ended an id's session, for the
	// failure message.
	endedBy map[queue.VisitorID]string
	// line is the counted honest waiters in line, by ticket; head the first of them
	// and headTurns the no-shows' turns since it became the head.
	line      []*visitor
	head      *visitor
	headTurns map[queue.VisitorID]int
	bots      []*bot
	// adaptPeriod is the last control period whose decision was checked.
	adaptPeriod int64
	// open are the known-open invariants already seen broken in this seed.
	open map[invariant]bool
}

func newWatch(capacity int) *watch {
	return &watch{ceiling: capacity, confirmed: map[queue.VisitorID]time.Time{}, began: map[queue.VisitorID]time.Time{}, endedBy: map[queue.VisitorID]string{}, headTurns: map[queue.VisitorID]int{}, open: map[invariant]bool{}}
}

// request checks one request's decision.
func (w *watch) request(s *sale, i int, v *room.Visit, d *room.Decision) {
	now := s.clock.Now()
	if v.Socket && d.Outcome == room.Admitted {
		s.fail(socketNeverShops, "i%d handed a waiting socket of %s to the shop", i, d.Visitor)
	}
	if d.Place == queue.Admitted && d.Outcome != room.TellAdmitted {
		st, err := s.fleet[i].store.Status(s.ctx, d.Visitor, now)
		if err != nil {
			s.t.Fatalf("status: %v", err)
		}
		last, ok := w.confirmed[d.Visitor]
		switch {
		case st.State == queue.Admitted:
			if !ok {
				w.admittedIDs = append(w.admittedIDs, d.Visitor)
			}
			if !ok || now.Sub(last) > queue.TouchEvery+step || w.endedBy[d.Visitor] != "" {
				w.began[d.Visitor] = now
			}
			w.confirmed[d.Visitor] = now
			delete(w.endedBy, d.Visitor)
		case !ok:
			s.fail(sessionEndHeld, "i%d let %s in, whose session the store never held (it says %v)", i, d.Visitor, st.State)
		case now.Sub(last) > queue.TouchEvery+step:
			s.fail(sessionEndHeld, "i%d let %s in %v after the store last held its session, which began %v ago (it says %v now; %s)",
				i, d.Visitor, now.Sub(last), now.Sub(w.began[d.Visitor]), st.State, cmp.Or(w.endedBy[d.Visitor], "the store ended it itself: session_max or session_ttl"))
		}
	}
	if d.Place == queue.Admitted {
		w.event(s, fmt.Sprintf("i%d request", i)) // only an admission can fill a slot
	}
}

// event checks the fleet-wide capacity after anything that may admit.
func (w *watch) event(s *sale, what string) {
	st, err := s.store().Stats(s.ctx)
	if err != nil {
		s.t.Fatalf("stats: %v", err)
	}
	w.active = st.Active
	capacity := 0
	for i := range s.fleet {
		capacity = max(capacity, s.settings(i).Capacity)
	}
	patched := w.patched
	w.patched = 0
	switch {
	case st.Active <= capacity:
		w.ceiling = capacity
	case st.Active <= patched: // let in under the PATCH's capacity, lowered since
		w.ceiling = st.Active
	case st.Active > w.ceiling:
		s.fail(capacityHeld, "after %s the store holds %d admitted: capacity %d in force, %d held when it last came down", what, st.Active, capacity, w.ceiling)
	default:
		w.ceiling = st.Active
	}
}

// joined puts a counted honest waiter in the line at its ticket (again, if it lost
// its place and joined anew).
func (w *watch) joined(s *sale, v *visitor) {
	w.drop(v.id)
	if !v.counted || v.sleeps || !w.ordered(s) {
		return
	}
	for j, o := range w.line {
		if o == v {
			w.line = slices.Delete(w.line, j, j+1)
			break
		}
	}
	at, _ := slices.BinarySearchFunc(w.line, v.ticket, func(o *visitor, t uint64) int { return cmp.Compare(o.ticket, t) })
	w.line = slices.Insert(w.line, at, v)
}

// ordered reports whether every instance admits in arrival order (fifo, or holding
// everyone in queue_all).
func (w *watch) ordered(s *sale) bool {
	for i := range s.fleet {
		if m := s.settings(i).Mode; m != queue.ModeFIFO && m != queue.ModeQueueAll {
			return false
		}
	}
	return true
}

// drop takes id out of the line: it left it otherwise than by its turn.
func (w *watch) drop(id queue.VisitorID) {
	w.line = slices.DeleteFunc(w.line, func(o *visitor) bool { return o.id == id })
}

// ended notes that the sale ended id's session or place, by how.
func (w *watch) ended(s *sale, id queue.VisitorID, how string) {
	w.drop(id)
	w.endedBy[id] = fmt.Sprintf("%s at %.2fs", how, s.clock.Now().Sub(saleStart).Seconds())
}

// reset forgets the line: everyone in it lost their place.
func (w *watch) reset(s *sale) {
	w.line, w.head = nil, nil
	for _, id := range w.admittedIDs {
		w.endedBy[id] = fmt.Sprintf("reset at %.2fs", s.clock.Now().Sub(saleStart).Seconds())
	}
}

// someAdmitted is a random id the fleet let in, for the operator to remove.
func (w *watch) someAdmitted(s *sale) (queue.VisitorID, bool) {
	if len(w.admittedIDs) == 0 {
		return queue.VisitorID{}, false
	}
	return w.admittedIDs[s.rng.IntN(len(w.admittedIDs))], true
}

// afterStep checks the line once every instance has stepped: the order of the
// honest waiters' admissions, the no-shows' turns and slots.
func (w *watch) afterStep(s *sale) {
	if !w.ordered(s) {
		w.line, w.head = nil, nil
	}
	w.checkLine(s)
	if len(w.line) == 0 || w.line[0] != w.head {
		w.head = nil
		clear(w.headTurns)
		if len(w.line) > 0 {
			w.head = w.line[0]
		}
	}
	w.checkBots(s)
}

func (w *watch) checkLine(s *sale) {
	if len(w.line) == 0 {
		return
	}
	now := s.clock.Now()
	tickets := make([]uint64, len(w.line))
	for j, v := range w.line {
		tickets[j] = v.ticket
	}
	pos := make([]int, len(tickets))
	if err := s.store().Positions(s.ctx, tickets, pos); err != nil {
		s.t.Fatalf("positions: %v", err)
	}
	var left []*visitor
	for j, v := range w.line {
		if pos[j] > 0 {
			continue
		}
		st, err := s.store().Status(s.ctx, v.id, now)
		if err != nil {
			s.t.Fatalf("status: %v", err)
		}
		switch st.State {
		case queue.Admitted:
			left = append(left, v)
		case queue.Queued:
			s.fail(fifoKept, "%s (#%d) was sent away from the line while it polled", v.name, v.ticket)
		}
	}
	for _, v := range left {
		for _, o := range w.line {
			if o.ticket < v.ticket && !slices.Contains(left, o) {
				s.fail(fifoKept, "%s (#%d) was let in before %s (#%d), who came first and still waits", v.name, v.ticket, o.name, o.ticket)
			}
		}
	}
	w.line = slices.DeleteFunc(w.line, func(v *visitor) bool {
		return slices.Contains(left, v) || pos[slices.Index(tickets, v.ticket)] == 0
	})
}

func (w *watch) checkBots(s *sale) {
	now := s.clock.Now()
	arrive := time.Duration(0)
	arriveOff := false
	for i := range s.fleet {
		a := s.settings(i).ArriveTTL
		arrive, arriveOff = max(arrive, a), arriveOff || a == 0
	}
	for _, b := range w.bots {
		if !b.joined {
			continue
		}
		// Listen, the socket's own look: a page's Status would bring a no-show back,
		// and the bot never makes one.
		st, err := s.store().Listen(s.ctx, b.id, now)
		if err != nil {
			s.t.Fatalf("status: %v", err)
		}
		if st.State != queue.Admitted {
			b.admitted = false
			continue
		}
		if !b.admitted {
			b.admitted, b.since, b.arriveTTL = true, now, arrive
			if arriveOff {
				b.arriveTTL = 0
			}
			if !b.atJoin && w.head != nil {
				w.headTurns[b.id]++
				s.trace.add(now, "%s's turn %d while %s waits at the head", b.name, w.headTurns[b.id], w.head.name)
				if n := w.headTurns[b.id]; n > noShowTurns {
					s.fail(noShowsLetTheHeadIn, "%s (%s), who never came to the shop, got turn %d while %s (#%d) waited at the head of the honest line",
						b.name, b.kind(), n, w.head.name, w.head.ticket)
				}
			}
			continue
		}
		if arriveOff {
			b.arriveTTL = 0
		} else if b.arriveTTL > 0 {
			b.arriveTTL = max(b.arriveTTL, arrive)
		}
		if !b.atJoin && b.arriveTTL > 0 && now.Sub(b.since) > b.arriveTTL+2*step {
			s.fail(socketIsNoArrival, "%s (%s), admitted from the line %v ago, only opened sockets and still holds its slot (arrive_ttl %v)",
				b.name, b.kind(), now.Sub(b.since), b.arriveTTL)
		}
	}
}

// adapted checks the decision instance i's step just made, if it made one, from the
// capacity from it had before.
func (w *watch) adapted(s *sale, i int, from int) {
	set := s.settings(i)
	d := set.Overrides.Adapted
	if d == nil || d.Period <= w.adaptPeriod || set.Adapt == nil {
		return
	}
	w.adaptPeriod = d.Period
	s.trace.add(s.clock.Now(), "i%d adapt: period %d, %d requests, p90 %v: %d → %d (%s)", i, d.Period, d.Requests, time.Duration(d.P90), from, d.Capacity, d.Reason)
	read := s.shop.read[d.Period]
	if read == nil {
		read = &queue.Sample{Latency: make([]uint64, queue.LatencyBuckets)}
	}
	honest := s.shop.honest[d.Period]
	if honest == nil {
		honest = &queue.Sample{Latency: make([]uint64, queue.LatencyBuckets)}
	}
	// The law on the shop's own answers as it is to read them, in the room most
	// ready to move: full, a line waiting, nothing else limiting.
	r := capacity.Reading{Requests: read.Count(), Failed: read.Failed, P90: read.Percentile(0.9), Active: from, Waiting: 1}
	within := r.Requests > 0 && r.P90 <= set.Adapt.Latency && (r.Failed < 2 || r.ErrorShare() <= set.Adapt.Errors)
	over := r.Requests > 0 && !within
	// The reason says whether the law moved the capacity: from is this instance's
	// capacity before its step, which an operator's PATCH read in the same step may
	// have changed.
	switch {
	case strings.HasPrefix(d.Reason, "raised") && !within:
		s.fail(adaptFollowsTheShop, "period %d raised capacity %d → %d on %d requests (p90 %v), where the shop did %d, weighed by visitor (p90 %v, %d failed; %d for the others, p90 %v)",
			d.Period, from, d.Capacity, d.Requests, time.Duration(d.P90), r.Requests, r.P90, r.Failed, honest.Count(), honest.Percentile(0.9))
	case strings.HasPrefix(d.Reason, "lowered") && !over:
		s.fail(adaptFollowsTheShop, "period %d lowered capacity %d → %d on %d requests (p90 %v), where the shop did %d, weighed by visitor (p90 %v, %d failed; %d for the others, p90 %v)",
			d.Period, from, d.Capacity, d.Requests, time.Duration(d.P90), r.Requests, r.P90, r.Failed, honest.Count(), honest.Percentile(0.9))
	}
}
