package queue

import (
	"context"
	"time"
)

// PassLane marks the memory store's tickets of the pass lane: PassLane + n for the
// lane's n-th waiter. Tickets are only ever handed back to the store that issued them
// (Positions), so another store may number its lane otherwise.
const PassLane uint64 = 1 << 52

// passLane is the memory store's line of pass holders, ahead of the ordinary one. It
// is the ordinary line's structure again, smaller: slots by ticket, a tree over the
// present waiters' slots. Its waiters share the store's heard and gone lists and are
// counted in the store's waiting and away, so liveness, Stats and the "anybody
// waiting?" of Join see one line; only order and position tell the lanes apart.
type passLane struct {
	slots   []*memVisitor
	live    fenwick
	base    uint64 // lane number of slots[0]
	next    uint64 // lane number of the next pass holder to queue
	held    int    // pass holders queued, present or away
	waiting int    // of them present
}

// memPass is one pass's use counter.
type memPass struct {
	left    int
	expires int64
}

func (s *MemoryStore) JoinPass(_ context.Context, id VisitorID, pass PassUse, now time.Time, lim Limits) (Status, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v := s.visitors[id]; v != nil {
		st := s.statusLocked(v, now)
		st.Known = true
		return st, true, nil
	}
	s.prunePassesLocked(now)
	c := s.passes[pass.ID]
	if c == nil {
		c = &memPass{left: pass.Uses, expires: pass.Expires.UnixNano()}
	}
	if c.left <= 0 {
		return Status{}, false, nil
	}
	// An invited waiter counts as heard from: the operator's pass stands for it.
	v := &memVisitor{id: id, at: now.UnixNano(), pass: true, shown: true}
	admit := s.pass.waiting == 0 && !lim.Hold && s.active.len < lim.Capacity && s.rateBudgetLocked(now, lim) != 0
	if !admit && lim.NoQueue {
		return Status{State: Rejected, Active: s.active.len, Waiting: s.waiting}, true, nil
	}
	c.left--
	if s.passes == nil {
		s.passes = make(map[string]*memPass)
	}
	s.passes[pass.ID] = c
	s.visitors[id] = v
	if admit {
		s.admitLocked(v, now, lim)
		s.countLocked(now, lim, ReasonPass, 1)
		return Status{State: Admitted, Since: admittedAt(v), Active: s.active.len, Waiting: s.waiting}, true, nil
	}
	s.enqueuePassLocked(v)
	return Status{State: Queued, Ticket: v.ticket, Position: s.positionLocked(v.ticket),
		Active: s.active.len, Waiting: s.waiting}, true, nil
}

// prunePassesLocked forgets the counters of expired passes, at most once a minute.
func (s *MemoryStore) prunePassesLocked(now time.Time) {
	n := now.UnixNano()
	if n < s.passesPruned+int64(time.Minute) {
		return
	}
	s.passesPruned = n
	for id, c := range s.passes {
		if c.expires <= n {
			delete(s.passes, id)
		}
	}
}

func (s *MemoryStore) enqueuePassLocked(v *memVisitor) {
	l := &s.pass
	if l.held == 0 { // an empty lane starts over, so its slots follow its waiters
		l.slots, l.live, l.base = l.slots[:0], l.live[:0], l.next
	}
	v.state = Queued
	v.ticket = PassLane + l.next
	l.next++
	l.slots = append(l.slots, v)
	l.live.push(1)
	l.held++
	l.waiting++
	s.heard.pushBack(v)
	s.waiting++
}

// slot is v's index in the lane's slots.
func (l *passLane) slot(v *memVisitor) int { return int(v.ticket - PassLane - l.base) }

// setLiveLocked marks queued v present (+1) or away (-1) in its lane's tree.
func (s *MemoryStore) setLiveLocked(v *memVisitor, delta int32) {
	if v.pass {
		s.pass.live.add(s.pass.slot(v), delta)
		s.pass.waiting += int(delta)
		return
	}
	s.live.add(int(v.ticket-s.base), delta)
}

// dequeuePassLocked takes pass holder v out of the lane.
func (s *MemoryStore) dequeuePassLocked(v *memVisitor) {
	l := &s.pass
	l.slots[l.slot(v)] = nil
	l.held--
	if v.away {
		s.gone.remove(v)
		s.away--
		return
	}
	l.live.add(l.slot(v), -1)
	l.waiting--
	s.heard.remove(v)
	s.waiting--
}

// firstPassLocked is the present pass holder with the lowest ticket, or nil.
func (s *MemoryStore) firstPassLocked() *memVisitor {
	if s.pass.waiting == 0 {
		return nil
	}
	return s.pass.slots[s.pass.live.find(0)]
}

// passPositionLocked is the position of the pass lane's ticket: present pass holders
// ahead + 1. An ordinary waiter's position adds every present pass holder.
func (s *MemoryStore) passPositionLocked(ticket uint64) int {
	return s.pass.live.prefix(int(ticket-PassLane-s.pass.base)) + 1
}

// passPresentLocked reports whether ticket is a present waiter of the pass lane.
func (s *MemoryStore) passPresentLocked(ticket uint64) bool {
	i := ticket - PassLane - s.pass.base
	if ticket < PassLane+s.pass.base || i >= uint64(len(s.pass.slots)) {
		return false
	}
	v := s.pass.slots[i]
	return v != nil && !v.away
}
