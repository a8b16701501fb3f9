package queue

import (
	"bytes"
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// MemoryStore is the embedded store: one room's state in this process, guarded by one
// mutex. Every operation is O(1) or O(log n) in the number of waiters; nothing a
// request or a step does scans the queue. The module pools it by room name, so a
// reload keeps every place, and saves it to disk behind the hot path (AppendState,
// once a second: the one walk of the whole room, holding the lock to copy it out),
// so a restart does too (LoadMemoryStore).
type MemoryStore struct {
	mu       sync.Mutex
	visitors map[VisitorID]*memVisitor

	// active holds admitted visitors ordered by last-seen, oldest first, so expiry
	// sweeps only look at the front.
	active visitorList
	// byAdmission holds the same visitors ordered by admission, oldest first, for
	// Limits.SessionMax (memory_sessionmax.go).
	byAdmission admissionList

	// The queue: slots[i] holds the waiter with ticket base+i, present or away, nil
	// once the place is gone. live counts the present waiters' slots, so a position is
	// one prefix sum and the head is one descent. head is the first slot that may
	// still be held (compaction drops the slots before it).
	slots   []*memVisitor
	live    fenwick
	base    uint64
	head    int
	waiting int // present waiters
	away    int // away waiters
	// heard holds the present waiters ordered by last-heard, oldest first, and gone
	// the away ones, likewise: each sweep looks only at a front.
	heard visitorList
	gone  visitorList

	nextTicket    uint64
	admittedTotal uint64
	secret        []byte
	overrides     []byte

	// expected are the admissions from the queue awaiting their arrival, oldest first,
	// and noShows counts those that did not arrive in time (memory_arrive.go).
	expected []expected
	noShows  uint64

	// recent holds the times (unix nanoseconds, oldest first) of the admissions inside
	// the rate window, at most Limits.Rate of them; empty while there is no rate.
	recent []int64
	// shuffled holds the keys of the lotteries already drawn (see Shuffle).
	shuffled map[string]bool
	// once is the once-only check's keys (memory_once.go), under its own lock.
	once onceKeys
	// samples are the shop's measurements by control period (memory_sample.go).
	samples samples
	// est is the room's estimator, kept here so that its evidence lasts as the
	// store does: across reloads, and in the state file across restarts.
	est *Estimator

	// pass is the lane of pass holders, ahead of the line (memory_pass.go); passes
	// counts each pass's uses left, forgotten after the pass expires.
	pass         passLane
	passes       map[string]*memPass
	passesPruned int64

	// moved are the ids that gave their places to another device, and handoffs
	// counts the moves (memory_move.go).
	moved    movedMarks
	handoffs uint64

	// draws are the room's draws and its admissions by reason (memory_draw.go).
	draws memDraws

	subsMu  sync.Mutex
	subs    map[int]func([]VisitorID)
	nextSub int

	// saved is the last save's copy of the visitors (memory_state.go), kept for the
	// next save under savingMu: a new one each second, its pages faulted in and zeroed
	// under the lock, would double the time a save holds mu.
	savingMu sync.Mutex
	saved    []savedVisitor
}

// memVisitor is one visitor: in the active list when admitted, in a slot and the heard
// (or, away, the gone) list when queued. About 130 bytes per waiter with the map
// entry, slot and tree node.
type memVisitor struct {
	id         VisitorID
	state      State
	away       bool // queued, but not heard from within QueueTTL
	pass       bool // queued in the pass lane
	shown      bool // queued, and heard from since joining (or invited): kept away, not dropped
	due        bool // admitted from the queue and not arrived yet (Limits.ArriveTTL)
	missed     bool // queued again as a no-show: its turn came while away, and a second miss loses the place
	ticket     uint64
	at         int64 // last seen (admitted) or last heard (queued), unix nanoseconds
	prev, next *memVisitor
	admission  admissionLink // admitted only: when, and the byAdmission list
}

func NewMemoryStore() *MemoryStore {
	return &MemoryStore{
		visitors:   make(map[VisitorID]*memVisitor),
		nextTicket: 1,
		subs:       make(map[int]func([]VisitorID)),
		est:        NewEstimator(),
	}
}

// Estimator is the room's estimator, as long-lived as the store.
func (s *MemoryStore) Estimator() *Estimator { return s.est }

func (s *MemoryStore) Join(_ context.Context, id VisitorID, now time.Time, lim Limits) (Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v := s.visitors[id]; v != nil {
		st := s.statusLocked(v, now)
		st.Known = true
		return st, nil
	}
	v := &memVisitor{id: id, at: now.UnixNano()}
	if s.waiting == 0 && !lim.Hold && s.active.len < lim.Capacity && s.rateBudgetLocked(now, lim) != 0 {
		s.visitors[id] = v
		s.admitLocked(v, now, lim)
		s.countLocked(now, lim, ReasonInOrder, 1)
		return Status{State: Admitted, Since: admittedAt(v), Active: s.active.len}, nil
	}
	if lim.NoQueue {
		return Status{State: Rejected, Active: s.active.len, Waiting: s.waiting}, nil
	}
	s.visitors[id] = v
	s.enqueueLocked(v)
	return Status{State: Queued, Ticket: v.ticket, Position: s.positionLocked(v.ticket),
		Active: s.active.len, Waiting: s.waiting}, nil
}

func (s *MemoryStore) Status(_ context.Context, id VisitorID, now time.Time) (Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.visitors[id]
	if v == nil {
		return s.movedStatusLocked(id, now), nil
	}
	return s.statusLocked(v, now), nil
}

func (s *MemoryStore) Listen(_ context.Context, id VisitorID, now time.Time) (Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.visitors[id]
	switch {
	case v == nil:
		return s.movedStatusLocked(id, now), nil
	case notBack(v):
		return Status{State: Queued, Ticket: v.ticket, Missed: true, Active: s.active.len, Waiting: s.waiting}, nil
	}
	return s.statusLocked(v, now), nil
}

// notBack says v is a no-show queued again and away, which only a page request
// brings back (Store.Listen).
func notBack(v *memVisitor) bool { return v.state == Queued && v.away && v.missed }

// statusLocked reports v's standing; for a waiter it also refreshes last-heard, which
// brings an away waiter back.
func (s *MemoryStore) statusLocked(v *memVisitor, now time.Time) Status {
	if v.state == Admitted {
		return Status{State: Admitted, Since: admittedAt(v), Active: s.active.len, Waiting: s.waiting}
	}
	missed := v.missed
	returned := s.hearLocked(v, now)
	return Status{State: Queued, Ticket: v.ticket, Position: s.positionLocked(v.ticket), Returned: returned,
		Missed: returned && missed, Active: s.active.len, Waiting: s.waiting}
}

// hearLocked records that waiter v was heard from at now, bringing it back to its
// ticket if it was away, and reports whether it was.
func (s *MemoryStore) hearLocked(v *memVisitor, now time.Time) bool {
	v.shown = true
	if !v.away {
		s.refreshLocked(&s.heard, v, now)
		return false
	}
	v.away = false
	s.gone.remove(v)
	s.away--
	s.setLiveLocked(v, 1)
	s.waiting++
	v.at = max(v.at, now.UnixNano())
	s.heard.pushBack(v)
	return true
}

func (s *MemoryStore) Touch(_ context.Context, id VisitorID, now time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.visitors[id]
	if v == nil || v.state != Admitted {
		return false, nil
	}
	s.refreshLocked(&s.active, v, now)
	v.due = false // arrived
	return true, nil
}

func (s *MemoryStore) Heartbeat(_ context.Context, ids []VisitorID, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if v := s.visitors[id]; v != nil && v.state == Queued && !notBack(v) {
			s.hearLocked(v, now)
		}
	}
	return nil
}

func (s *MemoryStore) Leave(_ context.Context, id VisitorID) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.visitors[id]
	if v == nil {
		return false, nil
	}
	s.removeLocked(v)
	return true, nil
}

func (s *MemoryStore) Step(_ context.Context, now time.Time, lim Limits) (StepResult, error) {
	s.mu.Lock()
	nanos := now.UnixNano()
	for v := s.active.front; v != nil && v.at+int64(lim.SessionTTL) <= nanos; v = s.active.front {
		s.removeLocked(v)
	}
	s.endSessionsLocked(nanos, lim)
	noShows := s.noShowsLocked(nanos, lim)
	res := StepResult{Abandoned: s.sweepSilentLocked(now, lim), NoShows: noShows}
	budget, next := s.rateBudgetLocked(now, lim), 0
	for !lim.Hold && s.active.len < lim.Capacity && s.waiting > 0 && budget != 0 {
		v := s.firstPassLocked() // the pass lane goes first, in any mode
		var why Reason
		switch {
		case v != nil:
			why = laneReason(v)
		case lim.Random && lim.Picks != nil:
			why = ReasonRandom
			if v = s.pickLocked(lim.Picks, &next); v != nil {
				s.pickedLocked(lim.Picks.Draw, v.ticket)
			}
		case lim.Random:
			// Uniform among the present waiters of the ordinary lane (the pass lane's,
			// counted in waiting, are none: it is empty here).
			v, why = s.slots[s.live.find(rand.IntN(s.waiting))], ReasonRandom
		default:
			v = s.firstLocked()
			why = s.orderedLocked(v)
		}
		if v == nil {
			break // the picks are spent
		}
		s.dequeueLocked(v)
		s.admitLocked(v, now, lim)
		s.expectLocked(v, lim)
		res.Admitted = append(res.Admitted, v.id)
		res.ByReason[why]++
		s.countLocked(now, lim, why, 1)
		if budget > 0 {
			budget--
		}
	}
	s.compactLocked()
	s.mu.Unlock()

	s.announce(res.Admitted)
	return res, nil
}

func (s *MemoryStore) AdmitNow(_ context.Context, n int, now time.Time, lim Limits) (StepResult, error) {
	s.mu.Lock()
	res := StepResult{Abandoned: s.sweepSilentLocked(now, lim)}
	s.rateBudgetLocked(now, lim) // drops admissions that left the window
	for ; n > 0 && s.waiting > 0; n-- {
		v := s.firstPassLocked()
		if v == nil {
			v = s.firstLocked()
		}
		s.dequeueLocked(v)
		s.admitLocked(v, now, lim)
		s.expectLocked(v, lim)
		res.Admitted = append(res.Admitted, v.id)
	}
	res.ByReason[ReasonAdmin] = uint64(len(res.Admitted))
	s.countLocked(now, lim, ReasonAdmin, len(res.Admitted))
	s.compactLocked()
	s.mu.Unlock()

	s.announce(res.Admitted)
	return res, nil
}

// sweepSilentLocked sends away the waiters not heard from within QueueTTL (or drops
// them, when nobody is kept away or they were never heard from since joining), drops
// the away waiters not heard from within AwayTTL, and counts the places dropped.
func (s *MemoryStore) sweepSilentLocked(now time.Time, lim Limits) int {
	n, nanos := 0, now.UnixNano()
	keep := lim.AwayTTL > lim.QueueTTL
	for v := s.heard.front; v != nil && v.at+int64(lim.QueueTTL) <= nanos; v = s.heard.front {
		if !keep || !v.shown || v.at+int64(lim.Keep()) <= nanos {
			s.removeLocked(v)
			n++
			continue
		}
		s.sendAwayLocked(v)
	}
	for v := s.gone.front; v != nil && v.at+int64(lim.Keep()) <= nanos; v = s.gone.front {
		s.removeLocked(v)
		n++
	}
	return n
}

// rateBudgetLocked forgets the admissions that left the rate window and returns how
// many more the rate allows now (-1: no rate limit).
func (s *MemoryStore) rateBudgetLocked(now time.Time, lim Limits) int {
	if lim.Rate <= 0 || lim.RatePer <= 0 {
		s.recent = s.recent[:0]
		return -1
	}
	cutoff, i := now.UnixNano()-int64(lim.RatePer), 0
	for i < len(s.recent) && s.recent[i] <= cutoff {
		i++
	}
	s.recent = s.recent[i:]
	return lim.rateBudget(len(s.recent))
}

// Shuffle permutes the held waiters, present and away, over their own slots, so the
// ticket set stays as it is; the tree follows who is present. O(waiters), once per
// event.
func (s *MemoryStore) Shuffle(_ context.Context, key string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shuffled[key] {
		return false, nil
	}
	if s.shuffled == nil {
		s.shuffled = make(map[string]bool)
	}
	s.shuffled[key] = true
	var at []int
	var vs []*memVisitor
	for i := s.head; i < len(s.slots); i++ {
		if v := s.slots[i]; v != nil {
			at = append(at, i)
			vs = append(vs, v)
		}
	}
	rand.Shuffle(len(vs), func(i, j int) { vs[i], vs[j] = vs[j], vs[i] })
	for j, i := range at {
		s.slots[i] = vs[j]
		vs[j].ticket = s.base + uint64(i)
	}
	s.rebuildLiveLocked()
	return true, nil
}

func (s *MemoryStore) Reset(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.visitors)
	s.active, s.byAdmission = visitorList{}, admissionList{}
	s.heard, s.gone = visitorList{}, visitorList{}
	s.base = s.nextTicket
	s.slots, s.live, s.head, s.waiting, s.away = s.slots[:0], s.live[:0], 0, 0, 0
	s.pass = passLane{next: s.pass.next}
	clear(s.expected)
	s.expected = s.expected[:0]
	s.moved = movedMarks{}
	return nil
}

func (s *MemoryStore) Overrides(context.Context) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.overrides, nil
}

func (s *MemoryStore) SwapOverrides(_ context.Context, old, doc []byte) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !bytes.Equal(s.overrides, old) {
		return false, nil
	}
	if len(doc) == 0 {
		s.overrides = nil
	} else {
		s.overrides = append([]byte(nil), doc...)
	}
	return true, nil
}

func (s *MemoryStore) Positions(_ context.Context, tickets []uint64, out []int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, t := range tickets {
		out[i] = 0
		if t >= PassLane {
			if s.passPresentLocked(t) {
				out[i] = s.passPositionLocked(t)
			}
			continue
		}
		if t < s.base || t-s.base >= uint64(len(s.slots)) || s.slots[t-s.base] == nil || s.slots[t-s.base].away {
			continue
		}
		out[i] = s.positionLocked(t)
	}
	return nil
}

func (s *MemoryStore) Stats(context.Context) (Stats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Active: s.active.len, Waiting: s.waiting, Away: s.away, AdmittedTotal: s.admittedTotal, NoShows: s.noShows,
		Handoffs: s.handoffs}, nil
}

func (s *MemoryStore) Secret(_ context.Context, candidate []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.secret == nil {
		s.secret = append([]byte(nil), candidate...)
	}
	return s.secret, nil
}

// Fleet is this instance alone: the memory store serves one.
func (s *MemoryStore) Fleet(_ context.Context, reads int, _ time.Time, _ FleetWindows) (Fleet, error) {
	return Fleet{Instances: 1, Reads: reads}, nil
}

func (s *MemoryStore) Subscribe(fn func([]VisitorID)) func() {
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	n := s.nextSub
	s.nextSub++
	s.subs[n] = fn
	return func() {
		s.subsMu.Lock()
		defer s.subsMu.Unlock()
		delete(s.subs, n)
	}
}

// announce tells subscribers about admissions, outside the state lock so a slow
// subscriber never holds up joins.
func (s *MemoryStore) announce(ids []VisitorID) {
	if len(ids) == 0 {
		return
	}
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	for _, fn := range s.subs {
		fn(ids)
	}
}

// admitLocked admits v and, under a rate limit, records the admission in the window
// (the caller has called rateBudgetLocked at this now).
func (s *MemoryStore) admitLocked(v *memVisitor, now time.Time, lim Limits) {
	v.state = Admitted
	v.at = now.UnixNano()
	s.active.pushBack(v)
	s.byAdmission.pushBack(v)
	s.admittedTotal++
	if lim.Rate > 0 && lim.RatePer > 0 {
		s.recent = append(s.recent, v.at)
	}
}

func (s *MemoryStore) enqueueLocked(v *memVisitor) {
	v.state = Queued
	v.ticket = s.nextTicket
	s.nextTicket++
	if len(s.slots) == 0 {
		s.base = v.ticket
	}
	s.slots = append(s.slots, v)
	s.live.push(1)
	s.heard.pushBack(v)
	s.waiting++
}

func (s *MemoryStore) dequeueLocked(v *memVisitor) {
	if v.pass {
		s.dequeuePassLocked(v)
		return
	}
	i := int(v.ticket - s.base)
	s.slots[i] = nil
	if v.away {
		s.gone.remove(v)
		s.away--
		return
	}
	s.live.add(i, -1)
	s.heard.remove(v)
	s.waiting--
}

func (s *MemoryStore) removeLocked(v *memVisitor) {
	switch v.state {
	case Admitted:
		s.active.remove(v)
		s.byAdmission.remove(v)
	case Queued:
		s.dequeueLocked(v)
	}
	delete(s.visitors, v.id)
}

// firstLocked returns the present waiter with the lowest ticket (away waiters before
// it keep their slots); the caller knows there is one.
func (s *MemoryStore) firstLocked() *memVisitor {
	return s.slots[s.live.find(0)]
}

// positionLocked is the position of a queued ticket: every present pass holder is
// ahead of an ordinary waiter.
func (s *MemoryStore) positionLocked(ticket uint64) int {
	if ticket >= PassLane {
		return s.passPositionLocked(ticket)
	}
	return s.pass.waiting + s.live.prefix(int(ticket-s.base)) + 1
}

// compactLocked drops the dead slots before the head once they are at least half of
// the slice, so the queue's memory follows the waiters, not the tickets ever issued.
func (s *MemoryStore) compactLocked() {
	for s.head < len(s.slots) && s.slots[s.head] == nil {
		s.head++
	}
	if s.head < 1024 || s.head < len(s.slots)/2 {
		return
	}
	n := copy(s.slots, s.slots[s.head:])
	clear(s.slots[n:])
	s.slots = s.slots[:n]
	s.base += uint64(s.head)
	s.head = 0
	s.rebuildLiveLocked()
}

// rebuildLiveLocked makes the tree count the present waiters' slots again.
func (s *MemoryStore) rebuildLiveLocked() {
	s.live.rebuild(len(s.slots), func(i int) int32 {
		if v := s.slots[i]; v != nil && !v.away {
			return 1
		}
		return 0
	})
}

// refreshLocked moves v to the back of list l with time now. Calls may arrive with
// slightly out-of-order times from concurrent requests; keeping the later time keeps
// the list ordered enough for front-only sweeps.
func (s *MemoryStore) refreshLocked(l *visitorList, v *memVisitor, now time.Time) {
	if n := now.UnixNano(); n > v.at {
		v.at = n
	}
	l.remove(v)
	l.pushBack(v)
}

// visitorList is an intrusive doubly linked list of visitors, so moving a visitor to the
// back on every touch allocates nothing.
type visitorList struct {
	front, back *memVisitor
	len         int
}

func (l *visitorList) pushBack(v *memVisitor) {
	v.prev, v.next = l.back, nil
	if l.back != nil {
		l.back.next = v
	} else {
		l.front = v
	}
	l.back = v
	l.len++
}

func (l *visitorList) remove(v *memVisitor) {
	if v.prev != nil {
		v.prev.next = v.next
	} else {
		l.front = v.next
	}
	if v.next != nil {
		v.next.prev = v.prev
	} else {
		l.back = v.prev
	}
	v.prev, v.next = nil, nil
	l.len--
}
