package queue

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/draw"
)

// The memory store's draws file: the room's draws and its admissions by reason, kept
// beside the state file (memorystore writes both, internal/statefile frames each).
// It is a file of its own rather than more of the state file's body because the
// state file's body changes only by the rule of CONTRIBUTING's "Formats across
// versions" (a release that learns a body goes on writing the old one): a new file
// is no change to the old, the release before this one never opens it, and a rollback
// loses only the draws, which that release cannot run. The body, in this order:
//
//	room | current draw | high ticket | draws | minutes
//
// A draw is id | lottery | seed(32) | entry key(32) | committed (unix s) | public
// key | state | close | first | done | entrants (ascending; each the difference to
// the one before). A minute is its unix minute and its six counts. Unlike the state
// file's clocks, a draw's times are the wall clock's: a commitment is published.

// AppendDraws appends the store's draws and admissions by reason, for the room named
// room, to dst.
func (s *MemoryStore) AppendDraws(dst []byte, room string) []byte {
	s.mu.Lock()
	d := &s.draws
	type saved struct {
		rec      DrawRecord
		entrants []uint64 // not changed once closed; a random draw's picks are copied
	}
	draws := make([]saved, 0, len(d.byID))
	for _, m := range d.byID {
		e := m.entrants
		if m.rec.State == DrawOpen { // a random draw's picks so far, in the order taken
			e = slices.Sorted(slices.Values(e))
		}
		draws = append(draws, saved{m.rec, e})
	}
	minutes := slices.Clone(d.minutes)
	current, high := d.current, d.high
	s.mu.Unlock()

	slices.SortFunc(draws, func(a, b saved) int { return cmp.Compare(a.rec.ID, b.rec.ID) })
	w := stateWriter{b: dst}
	w.bytes([]byte(room))
	w.bytes([]byte(current))
	w.uint(high)
	w.uint(uint64(len(draws)))
	for _, m := range draws {
		r := m.rec
		w.bytes([]byte(r.ID))
		w.bytes([]byte(r.Lottery))
		w.b = append(w.b, r.Seed[:]...)
		w.b = append(w.b, r.EntryKey[:]...)
		w.int(r.Committed.Unix())
		w.bytes([]byte(r.PublicKey))
		w.byte(byte(r.State))
		w.uint(r.Close)
		w.uint(r.First)
		w.uint(uint64(r.Done))
		w.uint(uint64(len(m.entrants)))
		prev := uint64(0)
		for _, t := range m.entrants {
			w.uint(t - prev)
			prev = t
		}
	}
	w.uint(uint64(len(minutes)))
	for _, m := range minutes {
		w.int(m.at)
		for _, n := range m.n {
			w.uint(n)
		}
	}
	return w.b
}

// loadDraws reads what AppendDraws wrote for room.
func loadDraws(body []byte, room string) (memDraws, error) {
	var d memDraws
	r := stateReader{b: body}
	if name := r.bytes(); r.err == nil && string(name) != room {
		return d, fmt.Errorf("%w (%q)", ErrOtherRoom, name)
	}
	d.current = string(r.bytes())
	d.high = r.uint()
	for n := r.count("draws", 2+2+64+1+1+1+4); n > 0 && r.err == nil; n-- {
		var rec DrawRecord
		rec.ID, rec.Lottery = string(r.bytes()), string(r.bytes())
		if r.err != nil || len(r.b) < 64 {
			r.fail(errShortBody)
			break
		}
		copy(rec.Seed[:], r.b)
		copy(rec.EntryKey[:], r.b[32:])
		r.b = r.b[64:]
		rec.Committed = time.Unix(r.int(), 0).UTC()
		rec.PublicKey = string(r.bytes())
		rec.State = DrawState(r.byte())
		rec.Close, rec.First, rec.Done = r.uint(), r.uint(), int(min(r.uint(), 1<<31))
		m := &memDraw{}
		prev := uint64(0)
		for k := r.count("entrants", 1); k > 0 && r.err == nil; k-- {
			prev += r.uint()
			m.entrants = append(m.entrants, prev)
		}
		if r.err != nil {
			break
		}
		if err := draw.CheckDraw(rec.ID); err != nil {
			return d, err
		}
		if rec.State < DrawOpen || rec.State > DrawDrawn || rec.State == DrawClosed && rec.Random() ||
			rec.State == DrawOpen && !rec.Random() && len(m.entrants) > 0 {
			return d, fmt.Errorf("draw %s is %v with %d entrants", rec.ID, rec.State, len(m.entrants))
		}
		if !slices.IsSorted(m.entrants) || len(slices.Compact(slices.Clone(m.entrants))) != len(m.entrants) {
			return d, fmt.Errorf("draw %s has its entrants out of order", rec.ID)
		}
		if rec.State != DrawOpen {
			rec.Entrants = len(m.entrants)
		}
		if rec.Done > rec.Entrants {
			return d, fmt.Errorf("draw %s has placed %d of %d entrants", rec.ID, rec.Done, rec.Entrants)
		}
		if d.byID == nil {
			d.byID = make(map[string]*memDraw)
		}
		if d.byID[rec.ID] != nil {
			return d, fmt.Errorf("draw %s is there twice", rec.ID)
		}
		m.rec = rec
		d.byID[rec.ID] = m
	}
	for n := r.count("minutes", 1+6); n > 0 && r.err == nil; n-- {
		m := memMinute{at: r.int()}
		for i := range m.n {
			m.n[i] = r.uint()
		}
		if r.err == nil {
			if k := len(d.minutes); k > 0 && m.at <= d.minutes[k-1].at {
				return d, fmt.Errorf("the admissions' minutes go back in time")
			}
			d.minutes = append(d.minutes, m)
		}
	}
	if r.err != nil {
		return d, r.err
	}
	if len(r.b) > 0 {
		return d, fmt.Errorf("%d bytes past its end", len(r.b))
	}
	if d.current != "" && d.byID[d.current] == nil {
		return d, fmt.Errorf("the current draw %s is not there", d.current)
	}
	return d, nil
}

// LoadMemoryStoreWithDraws is LoadMemoryStore, and the draws that draws (as
// AppendDraws wrote them for room; nil for none) hold. While a draw is not drawn, the
// line keeps its tickets as saved (LoadMemoryStore may number a sparse line again):
// a draw's entrants are its tickets.
//
// The draws must be taken before the state (AppendDraws, then AppendState), so that
// the line is never behind its draws: a draw found open whose line was closed closes
// again (a second block set aside, unused), and an order found placed up to Done in a
// line placed further goes on from Done, passing over the places moved already.
func LoadMemoryStoreWithDraws(state, draws []byte, room string, now time.Time) (*MemoryStore, error) {
	var d memDraws
	if draws != nil {
		var err error
		if d, err = loadDraws(draws, room); err != nil {
			return nil, fmt.Errorf("draws: %w", err)
		}
	}
	keep := false
	for _, m := range d.byID {
		keep = keep || m.rec.State != DrawDrawn
	}
	s, err := loadMemoryStore(state, room, now, keep)
	if err != nil {
		return nil, err
	}
	for _, id := range slices.Sorted(maps.Keys(d.byID)) {
		rec := &d.byID[id].rec
		if rec.Lottery != "" {
			if s.shuffled == nil {
				s.shuffled = make(map[string]bool)
			}
			s.shuffled[rec.Lottery] = true
		}
		if rec.State == DrawOpen || rec.Random() {
			continue
		}
		if end := rec.First + uint64(rec.Entrants) + 1; s.nextTicket < end {
			// The state file was saved before the close set the order's block aside.
			if len(s.slots) == 0 {
				s.base = end
			}
			for s.base+uint64(len(s.slots)) < end && len(s.slots) > 0 {
				s.slots = append(s.slots, nil)
				s.live.push(0)
			}
			s.nextTicket = end
		}
	}
	s.draws = d
	return s, nil
}
