package queue

import (
	"context"
	"time"
)

// The memory store's side of Move: the visitor record is one *memVisitor that every
// list, slot and expectation points to, so re-keying it in the visitors map moves
// the whole place at once (ticket, lane, away, arrival, session). The marks of the
// ids that moved away are a map for Status and a list in the order they were made
// for forgetting them: each Move forgets the due marks at the list's front.

// movedMark is one id that gave its place away, remembered until until.
type movedMark struct {
	id    VisitorID
	until int64 // unix nanoseconds
}

// movedMarks are the ids Status reports as Moved.
type movedMarks struct {
	until map[VisitorID]int64
	order []movedMark
}

func (m *movedMarks) add(id VisitorID, until int64) {
	if m.until == nil {
		m.until = make(map[VisitorID]int64)
	}
	m.until[id] = until
	m.order = append(m.order, movedMark{id: id, until: until})
}

// has reports whether id moved away and its mark still holds at nanos.
func (m *movedMarks) has(id VisitorID, nanos int64) bool {
	until, ok := m.until[id]
	return ok && nanos < until
}

// forget drops the marks due at nanos from the front of the list. A mark made under
// a longer keep may stand in front of shorter ones; those wait for it, and has
// refuses them meanwhile.
func (m *movedMarks) forget(nanos int64) {
	i := 0
	for ; i < len(m.order) && m.order[i].until <= nanos; i++ {
		if m.until[m.order[i].id] == m.order[i].until {
			delete(m.until, m.order[i].id)
		}
	}
	clear(m.order[:i])
	m.order = m.order[i:]
}

func (s *MemoryStore) Move(_ context.Context, from, to VisitorID, now time.Time, lim Limits) (Status, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	nanos := now.UnixNano()
	s.moved.forget(nanos)
	v := s.visitors[from]
	if v == nil || from == to || s.visitors[to] != nil {
		return Status{}, false, nil
	}
	delete(s.visitors, from)
	v.id = to
	s.visitors[to] = v
	s.moved.add(from, nanos+int64(lim.MovedKeep()))
	s.handoffs++
	if v.state == Admitted {
		s.countLocked(now, lim, ReasonHandoff, 1)
	}
	return s.statusLocked(v, now), true, nil
}

// movedStatusLocked is Status's answer for an id the store does not hold: Moved
// while its mark holds, else Unknown.
func (s *MemoryStore) movedStatusLocked(id VisitorID, now time.Time) Status {
	if s.moved.has(id, now.UnixNano()) {
		return Status{State: Moved}
	}
	return Status{}
}
