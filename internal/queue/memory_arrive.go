package queue

// The memory store's side of Limits.ArriveTTL: a visitor admitted from the queue holds
// the slot for ArriveTTL on the strength of its turn alone, and keeps it only by
// arriving (a Touch). Its memVisitor says so in due; the store keeps one expectation
// per such admission, in admission order, so Step looks only at the front.

// expected is one admission from the queue awaiting its arrival: the visitor, and
// when it was admitted, which tells this admission from a later one of the same
// visitor (a no-show queued again and admitted anew).
type expected struct {
	v  *memVisitor
	at int64
}

// expectLocked records that v, just admitted from the queue at v.at, must arrive
// within lim.ArriveTTL.
func (s *MemoryStore) expectLocked(v *memVisitor, lim Limits) {
	if lim.ArriveTTL <= 0 {
		return
	}
	v.due = true
	s.expected = append(s.expected, expected{v: v, at: v.at})
}

// noShowsLocked gives back the slots of the visitors admitted ArriveTTL or longer
// before nanos who have not arrived, and counts them. Each is queued again, away and
// heard from at nanos, at the back of the pass lane: ahead of every ordinary waiter,
// in every mode, so that coming back it goes in first. That is kept once: a visitor
// missing the turn it kept (v.missed) is dropped, as is every no-show when nobody is
// kept away, so a place whose client never arrives (a bot that only reopens the
// waiting socket) holds the head of the line for two turns, not for ever. An
// expectation whose visitor arrived, left, or was admitted again since is passed
// over. With ArriveTTL off the expectations are forgotten: the visitors they name
// keep their slots as anyone admitted does.
func (s *MemoryStore) noShowsLocked(nanos int64, lim Limits) int {
	if lim.ArriveTTL <= 0 {
		clear(s.expected)
		s.expected = s.expected[:0]
		return 0
	}
	n, i := 0, 0
	for ; i < len(s.expected) && s.expected[i].at+int64(lim.ArriveTTL) <= nanos; i++ {
		e := s.expected[i]
		v := e.v
		if !v.due || v.state != Admitted || v.admission.at != e.at || s.visitors[v.id] != v {
			continue
		}
		n++
		s.noShows++
		v.due = false
		s.active.remove(v)
		s.byAdmission.remove(v)
		if v.missed || lim.AwayTTL <= lim.QueueTTL {
			delete(s.visitors, v.id)
			continue
		}
		v.at, v.pass, v.shown = nanos, true, true
		s.enqueuePassLocked(v)
		s.sendAwayLocked(v)
		v.missed = true
	}
	clear(s.expected[:i])
	s.expected = s.expected[i:]
	return n
}

// sendAwayLocked makes present waiter v away, as a quiet spell does.
func (s *MemoryStore) sendAwayLocked(v *memVisitor) {
	s.heard.remove(v)
	s.setLiveLocked(v, -1)
	s.waiting--
	v.away = true
	s.gone.pushBack(v)
	s.away++
}
