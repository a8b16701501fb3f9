package queue

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// The memory store's side of draws and of the admissions by reason (draws.go). It
// lives under the store's one lock, beside the line it draws from, and is kept in a
// file of its own beside the state file (memory_draws_state.go).

// memDraws are the room's draws and its admissions by reason.
type memDraws struct {
	current string              // the current draw's id, "" for none
	byID    map[string]*memDraw // the draws kept (DrawKeep)
	// high is the highest ordinary ticket admitted in order: a waiter admitted from
	// below it was passed by the line while away, and is counted as returned.
	high uint64
	// minutes are the admissions by reason of the minutes with any, oldest first,
	// the last minutesKept at most.
	minutes []memMinute
	// saved is called after a commit, a close and the last place of an order, with
	// the lock released: the module saves its files then, so that no commitment is
	// shown and then lost to a crash, and no draw is found drawn after a restart
	// whose line is not.
	saved func()
}

// minutesKept is AdmissionsKept a minute at a time, and the minute under way.
const minutesKept = int(AdmissionsKept/time.Minute) + 1

type memMinute struct {
	at int64 // unix minute
	n  ByReason
}

// memDraw is one draw: its record, and from the close on its entrants. A random
// draw's picks are its entrants as it goes.
type memDraw struct {
	rec      DrawRecord
	entrants []uint64 // ascending, each once
}

// OnDrawSaved sets the function the store calls after a draw's commit, close and last
// place, with its lock released (see memDraws.saved).
func (s *MemoryStore) OnDrawSaved(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.draws.saved = fn
}

// unlockSaving is how a call that changed a draw's state lets go of the lock: then it
// saves.
func (s *MemoryStore) unlockSaving() {
	saved := s.draws.saved
	s.mu.Unlock()
	if saved != nil {
		saved()
	}
}

func (s *MemoryStore) CommitDraw(_ context.Context, rec DrawRecord) (DrawRecord, error) {
	s.mu.Lock()
	d := &s.draws
	if cur := d.byID[d.current]; cur != nil && cur.rec.State != DrawDrawn {
		s.mu.Unlock()
		return cur.rec, nil
	}
	if had := d.byID[rec.ID]; had != nil {
		s.mu.Unlock()
		return had.rec, nil
	}
	if d.byID == nil {
		d.byID = make(map[string]*memDraw)
	}
	d.pruneLocked(rec.Committed)
	rec.State, rec.Close, rec.Entrants, rec.First, rec.Done = DrawOpen, 0, 0, 0, 0
	d.byID[rec.ID] = &memDraw{rec: rec}
	d.current = rec.ID
	if rec.Lottery != "" {
		if s.shuffled == nil {
			s.shuffled = make(map[string]bool)
		}
		s.shuffled[rec.Lottery] = true
	}
	s.unlockSaving()
	return rec, nil
}

// memDrawsKept is how many drawn draws the memory store keeps besides the current one:
// their pages answer, and every one is in every save.
const memDrawsKept = 8

// pruneLocked forgets the drawn draws committed DrawKeep or longer before now, and all
// but the memDrawsKept latest.
func (d *memDraws) pruneLocked(now time.Time) {
	var drawn []*memDraw
	for id, m := range d.byID {
		switch {
		case m.rec.State != DrawDrawn || id == d.current:
		case now.Sub(m.rec.Committed) >= DrawKeep:
			delete(d.byID, id)
		default:
			drawn = append(drawn, m)
		}
	}
	if len(drawn) > memDrawsKept {
		slices.SortFunc(drawn, func(a, b *memDraw) int { return b.rec.Committed.Compare(a.rec.Committed) })
		for _, m := range drawn[memDrawsKept:] {
			delete(d.byID, m.rec.ID)
		}
	}
}

func (s *MemoryStore) Draw(_ context.Context, id string) (DrawRecord, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id == "" {
		id = s.draws.current
	}
	if m := s.draws.byID[id]; m != nil {
		return m.rec, true, nil
	}
	return DrawRecord{}, false, nil
}

func (s *MemoryStore) CloseDraw(_ context.Context, id string) (DrawRecord, error) {
	s.mu.Lock()
	m := s.draws.byID[id]
	if m == nil {
		s.mu.Unlock()
		return DrawRecord{}, fmt.Errorf("closing draw %q: no such draw", id)
	}
	if m.rec.State != DrawOpen {
		s.mu.Unlock()
		return m.rec, nil
	}
	entrants := m.entrants // a random draw's picks
	for i := s.head; i < len(s.slots); i++ {
		if s.slots[i] != nil {
			entrants = append(entrants, s.base+uint64(i))
		}
	}
	slices.Sort(entrants)
	m.entrants = slices.Compact(entrants)
	rec := &m.rec
	rec.Close, rec.Entrants = s.nextTicket-1, len(m.entrants)
	if rec.Random() {
		rec.State = DrawDrawn
	} else {
		// The order's block: whoever joins from now on is behind it.
		rec.State, rec.First = DrawClosed, s.nextTicket-1
		s.reserveLocked(uint64(rec.Entrants))
		if rec.Entrants == 0 {
			rec.State = DrawDrawn
		}
	}
	out := *rec
	s.unlockSaving()
	return out, nil
}

// reserveLocked issues the next n tickets to nobody: their slots are empty until
// PlaceDraw fills them.
func (s *MemoryStore) reserveLocked(n uint64) {
	if len(s.slots) == 0 {
		s.base = s.nextTicket
	}
	for range n {
		s.slots = append(s.slots, nil)
		s.live.push(0)
	}
	s.nextTicket += n
}

func (s *MemoryStore) DrawEntrants(_ context.Context, id string, dst []uint64) ([]uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.draws.byID[id]
	if m == nil || m.rec.State == DrawOpen {
		return dst, fmt.Errorf("entrants of draw %q: not closed", id)
	}
	return append(dst, m.entrants...), nil
}

func (s *MemoryStore) PlaceDraw(_ context.Context, id string, done int, from []uint64) (DrawRecord, error) {
	s.mu.Lock()
	m := s.draws.byID[id]
	if m == nil {
		s.mu.Unlock()
		return DrawRecord{}, fmt.Errorf("placing draw %q: no such draw", id)
	}
	rec := &m.rec
	if rec.State != DrawClosed || rec.Done != done || done+len(from) > rec.Entrants {
		s.mu.Unlock()
		return *rec, nil
	}
	for i, t := range from {
		s.placeLocked(t, rec.First+uint64(done+1+i))
	}
	rec.Done += len(from)
	if rec.Done < rec.Entrants {
		out := *rec
		s.mu.Unlock()
		return out, nil
	}
	rec.State = DrawDrawn
	out := *rec
	s.unlockSaving()
	return out, nil
}

// placeLocked moves the place held at ticket from, if any, to the empty ticket to: the
// waiter, present or away, keeps everything else (its lists are by time, not by
// ticket).
func (s *MemoryStore) placeLocked(from, to uint64) {
	if from < s.base || to < s.base || from-s.base >= uint64(len(s.slots)) {
		return
	}
	i := int(from - s.base)
	v := s.slots[i]
	if v == nil {
		return
	}
	j := int(to - s.base)
	for len(s.slots) <= j { // a restored line ends at its last waiter
		s.slots = append(s.slots, nil)
		s.live.push(0)
	}
	if s.slots[j] != nil {
		return // not the line of this order's close (a restored line: see LoadMemoryStoreWithDraws)
	}
	s.slots[i], s.slots[j] = nil, v
	v.ticket = to
	if !v.away {
		s.live.add(i, -1)
		s.live.add(j, 1)
	}
}

func (s *MemoryStore) Present(_ context.Context, dst []uint64) ([]uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := s.head; i < len(s.slots); i++ {
		if v := s.slots[i]; v != nil && !v.away {
			dst = append(dst, s.base+uint64(i))
		}
	}
	return dst, nil
}

// pickLocked is the first of the picks, from *next on, that is a present waiter of
// the ordinary lane, or nil (also when their draw is no longer open); *next moves
// past it.
func (s *MemoryStore) pickLocked(p *Picks, next *int) *memVisitor {
	if m := s.draws.byID[p.Draw]; m == nil || m.rec.State != DrawOpen || !m.rec.Random() {
		return nil
	}
	picks := p.Tickets
	for ; *next < len(picks); *next++ {
		t := picks[*next]
		if t < s.base || t-s.base >= uint64(len(s.slots)) {
			continue
		}
		if v := s.slots[t-s.base]; v != nil && !v.away {
			*next++
			return v
		}
	}
	return nil
}

// pickedLocked records ticket, just admitted from open random draw id's picks, as an
// entrant of the draw.
func (s *MemoryStore) pickedLocked(id string, ticket uint64) {
	m := s.draws.byID[id]
	m.entrants = append(m.entrants, ticket)
}

// orderedLocked is the reason of admitting ordinary waiter v from the head of the
// line: in order, or returned when the line had passed its ticket.
func (s *MemoryStore) orderedLocked(v *memVisitor) Reason {
	if v.ticket < s.draws.high {
		return ReasonReturned
	}
	s.draws.high = v.ticket
	return ReasonInOrder
}

// laneReason is the reason of admitting pass holder v: its pass, or a no-show's
// turn kept in the lane (memory_arrive.go).
func laneReason(v *memVisitor) Reason {
	if v.missed {
		return ReasonReturned
	}
	return ReasonPass
}

// countLocked counts n admissions for reason why at now, when lim.Reasons says every
// instance reads the counts.
func (s *MemoryStore) countLocked(now time.Time, lim Limits, why Reason, n int) {
	if !lim.Reasons || n <= 0 {
		return
	}
	at := now.Unix() / 60
	ms := s.draws.minutes
	i := len(ms)
	for i > 0 && ms[i-1].at > at { // calls a moment apart may come in either order
		i--
	}
	if i == 0 || ms[i-1].at != at {
		ms = slices.Insert(ms, i, memMinute{at: at})
		i++
	}
	ms[i-1].n[why] += uint64(n)
	drop := 0
	for drop < len(ms) && ms[drop].at <= ms[len(ms)-1].at-int64(minutesKept) {
		drop++
	}
	s.draws.minutes = slices.Delete(ms, 0, drop)
}

func (s *MemoryStore) Admissions(_ context.Context, since, now time.Time) ([]Minute, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	to := now.Unix() / 60
	from := max(since.Unix()/60, to-int64(minutesKept)+1)
	var out []Minute
	for _, m := range s.draws.minutes {
		if m.at >= from && m.at <= to {
			out = append(out, Minute{At: time.Unix(m.at*60, 0).UTC(), ByReason: m.n})
		}
	}
	return out, nil
}
