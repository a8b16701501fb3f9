package queue

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// The memory store's state, as its state file holds it (internal/statefile frames it
// with a version and a checksum, and writes it behind the hot path). The body, in
// this order; each list starts with its length:
//
//	room | saved at | next ticket | pass lane's next | admitted total | no-shows |
//	hand-offs | secret | overrides | visitors | expected arrivals | rate window |
//	lotteries drawn | pass uses | moved marks | once-only keys | the shop's samples |
//	the estimator's samples
//
// A visitor is id(16) | flags(1) | ticket | at | admitted at: its ticket as a waiter
// (0 when admitted), when last heard from or seen, and when admitted (0 when
// queued). Times are unix nanoseconds, varints; counts and tickets uvarints.
//
// The room's clocks resume: every time that an age is counted from (when a waiter
// was last heard from, a session last seen and admitted, an arrival due, the rate
// window, a moved mark) is moved on by the time between the save and the restore,
// so the downtime counts against nobody, and a place that had expired before the
// save is still expired after it. Two times are the wall clock's and stay as they
// are: a pass's expiry and a once-only key's, since the pass and the challenge carry
// them, signed.

// Visitor flags in the state file.
const (
	savedAdmitted = 1 << iota // else queued
	savedAway
	savedPass
	savedShown
	savedDue
	savedMissed
	savedFlags = 1<<iota - 1
)

// savedVisitor is one visitor as AppendState copies it out under the lock.
type savedVisitor struct {
	id       VisitorID
	flags    byte
	ticket   uint64
	at, adAt int64
}

// savedArrival is an expected arrival as a save copies it: the visitor and when it
// was admitted.
type savedArrival struct {
	id VisitorID
	at int64
}

// AppendState appends the store's state as of now, for the room named room, to dst.
// It holds the store's lock only to copy the state out (48 bytes a visitor, into the
// copy the last save made); the encoding is done after.
func (s *MemoryStore) AppendState(dst []byte, room string, now time.Time) []byte {
	nanos := now.UnixNano()
	s.savingMu.Lock()
	defer s.savingMu.Unlock()
	s.mu.Lock()
	vs := s.saved[:0]
	if cap(vs) < len(s.visitors) {
		vs = make([]savedVisitor, 0, len(s.visitors)+len(s.visitors)/8) // room to grow
	}
	for i := s.head; i < len(s.slots); i++ {
		if v := s.slots[i]; v != nil {
			vs = append(vs, saveVisitor(v))
		}
	}
	for _, v := range s.pass.slots {
		if v != nil {
			vs = append(vs, saveVisitor(v))
		}
	}
	for v := s.byAdmission.front; v != nil; v = v.admission.next {
		vs = append(vs, saveVisitor(v))
	}
	var exp []savedArrival
	for _, e := range s.expected {
		if v := e.v; v.due && v.state == Admitted && v.admission.at == e.at && s.visitors[v.id] == v {
			exp = append(exp, savedArrival{id: v.id, at: e.at})
		}
	}
	var moved []movedMark
	for _, m := range s.moved.order {
		if m.until > nanos && s.moved.until[m.id] == m.until {
			moved = append(moved, m)
		}
	}
	type savedPass struct {
		id string
		memPass
	}
	var passes []savedPass
	for id, c := range s.passes {
		if c.expires > nanos {
			passes = append(passes, savedPass{id, *c})
		}
	}
	w := stateWriter{b: dst}
	w.bytes([]byte(room))
	w.int(nanos)
	w.uint(s.nextTicket)
	w.uint(s.pass.next)
	w.uint(s.admittedTotal)
	w.uint(s.noShows)
	w.uint(s.handoffs)
	w.bytes(s.secret)
	w.bytes(s.overrides)
	recent := slices.Clone(s.recent)
	shuffled := slices.Sorted(maps.Keys(s.shuffled))
	s.mu.Unlock()

	w.uint(uint64(len(vs)))
	for _, v := range vs {
		w.id(v.id)
		w.byte(v.flags)
		w.uint(v.ticket)
		w.int(v.at)
		w.int(v.adAt)
	}
	w.uint(uint64(len(exp)))
	for _, e := range exp {
		w.id(e.id)
		w.int(e.at)
	}
	w.uint(uint64(len(recent)))
	for _, t := range recent {
		w.int(t)
	}
	w.uint(uint64(len(shuffled)))
	for _, k := range shuffled {
		w.bytes([]byte(k))
	}
	slices.SortFunc(passes, func(a, b savedPass) int { return cmp.Compare(a.id, b.id) })
	w.uint(uint64(len(passes)))
	for _, p := range passes {
		w.bytes([]byte(p.id))
		w.uint(uint64(max(p.left, 0)))
		w.int(p.expires)
	}
	w.uint(uint64(len(moved)))
	for _, m := range moved {
		w.id(m.id)
		w.int(m.until)
	}
	once := s.once.saved(nanos)
	w.uint(uint64(len(once)))
	for _, e := range once {
		w.bytes([]byte(e.key))
		w.int(e.until)
	}
	periods := s.samples.saved()
	w.uint(uint64(len(periods)))
	for _, p := range periods {
		w.int(p.period)
		w.uint(p.Failed)
		w.uint(uint64(len(p.Latency)))
		for _, c := range p.Latency {
			w.uint(c)
		}
	}
	rates := s.est.saved()
	w.uint(uint64(len(rates)))
	for _, r := range rates {
		w.int(r.at.UnixNano())
		w.uint(r.total)
	}
	// Kept for the next save, unless the line has shrunk to under half of it: a
	// room after its sale does not hold on to the sale's copy.
	s.saved = nil
	if len(vs) >= cap(vs)/2 {
		s.saved = vs[:0]
	}
	return w.b
}

func saveVisitor(v *memVisitor) savedVisitor {
	sv := savedVisitor{id: v.id, at: v.at}
	for _, f := range [...]struct {
		on  bool
		bit byte
	}{{v.state == Admitted, savedAdmitted}, {v.away, savedAway}, {v.pass, savedPass}, {v.shown, savedShown},
		{v.due, savedDue}, {v.missed, savedMissed}} {
		if f.on {
			sv.flags |= f.bit
		}
	}
	if v.state == Admitted {
		sv.adAt = v.admission.at
	} else {
		sv.ticket = v.ticket
	}
	return sv
}

// saved is the once-only keys still unexpired at nanos, soonest first.
func (o *onceKeys) saved(nanos int64) []onceEntry {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]onceEntry, 0, len(o.order))
	for _, e := range o.order {
		if e.until > nanos {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b onceEntry) int { return cmp.Or(cmp.Compare(a.until, b.until), cmp.Compare(a.key, b.key)) })
	return out
}

// ErrOtherRoom is a state body written for another room.
var ErrOtherRoom = errors.New("written for another room")

// maxSlack is how many dead ticket slots a restored line may carry beyond four per
// waiter: a line with more (one waiter away while millions joined and left) is
// numbered again densely, in the same order, since no ticket outlives the process
// but in the store itself, unless a draw not yet drawn has its entrants by ticket.
const maxSlack = 1 << 20

// LoadMemoryStore is the memory store that body (as AppendState wrote it for room)
// holds, its clocks resumed at now. It checks the whole body before it trusts any of
// it, and refuses one that does not hold together: the error says what is wrong.
func LoadMemoryStore(body []byte, room string, now time.Time) (*MemoryStore, error) {
	return loadMemoryStore(body, room, now, false)
}

// loadMemoryStore is LoadMemoryStore; keepTickets says a draw needs the line's tickets
// as they were (memory_draws_state.go).
func loadMemoryStore(body []byte, room string, now time.Time, keepTickets bool) (*MemoryStore, error) {
	r := stateReader{b: body}
	if name := r.bytes(); r.err == nil && string(name) != room {
		return nil, fmt.Errorf("%w (%q)", ErrOtherRoom, name)
	}
	savedAt := r.int()
	shift := now.UnixNano() - savedAt
	s := NewMemoryStore()
	s.nextTicket = r.uint()
	s.pass.next = r.uint()
	s.admittedTotal = r.uint()
	s.noShows = r.uint()
	s.handoffs = r.uint()
	if sec := r.bytes(); len(sec) > 0 {
		s.secret = sec
	}
	if doc := r.bytes(); len(doc) > 0 {
		s.overrides = doc
	}
	if r.err == nil && (s.nextTicket == 0 || s.nextTicket >= PassLane || s.pass.next >= PassLane) {
		return nil, fmt.Errorf("next ticket %d or pass lane's %d out of range", s.nextTicket, s.pass.next)
	}

	var line, lane, admitted []*memVisitor
	for n := r.count("visitors", 16+1+1+1+1); n > 0 && r.err == nil; n-- {
		v := &memVisitor{id: r.id()}
		flags, ticket, at, adAt := r.byte(), r.uint(), r.int(), r.int()
		if r.err != nil {
			break
		}
		if flags&^savedFlags != 0 {
			return nil, fmt.Errorf("visitor %s has unknown flags %#x", v.id, flags)
		}
		if s.visitors[v.id] != nil {
			return nil, fmt.Errorf("visitor %s is there twice", v.id)
		}
		v.away, v.pass, v.shown = flags&savedAway != 0, flags&savedPass != 0, flags&savedShown != 0
		v.due, v.missed = flags&savedDue != 0, flags&savedMissed != 0
		v.at = at + shift
		s.visitors[v.id] = v
		switch {
		case flags&savedAdmitted != 0:
			if ticket != 0 || v.away {
				return nil, fmt.Errorf("admitted visitor %s has a ticket or is away", v.id)
			}
			v.state, v.admission.at = Admitted, adAt+shift
			admitted = append(admitted, v)
		case v.due:
			return nil, fmt.Errorf("waiter %s is due to arrive", v.id)
		case v.pass:
			if ticket < PassLane || ticket-PassLane >= s.pass.next {
				return nil, fmt.Errorf("waiter %s has pass ticket %d, past the lane's %d", v.id, ticket, s.pass.next)
			}
			v.state, v.ticket = Queued, ticket
			lane = append(lane, v)
		default:
			if ticket == 0 || ticket >= s.nextTicket {
				return nil, fmt.Errorf("waiter %s has ticket %d, past the next %d", v.id, ticket, s.nextTicket)
			}
			v.state, v.ticket = Queued, ticket
			line = append(line, v)
		}
	}
	for n := r.count("expected arrivals", 16+1); n > 0 && r.err == nil; n-- {
		id, at := r.id(), r.int()
		v := s.visitors[id]
		if r.err == nil && (v == nil || v.state != Admitted || !v.due || v.admission.at != at+shift) {
			return nil, fmt.Errorf("expected arrival of %s matches no admission due", id)
		}
		s.expected = append(s.expected, expected{v: v, at: at + shift})
	}
	for n := r.count("admissions in the rate window", 1); n > 0 && r.err == nil; n-- {
		s.recent = append(s.recent, r.int()+shift)
	}
	for n := r.count("lotteries", 1); n > 0 && r.err == nil; n-- {
		if s.shuffled == nil {
			s.shuffled = make(map[string]bool)
		}
		s.shuffled[string(r.bytes())] = true
	}
	for n := r.count("passes", 3); n > 0 && r.err == nil; n-- {
		id, left, expires := string(r.bytes()), r.uint(), r.int()
		if s.passes == nil {
			s.passes = make(map[string]*memPass)
		}
		s.passes[id] = &memPass{left: int(min(left, 1<<31)), expires: expires}
	}
	for n := r.count("moved marks", 16+1); n > 0 && r.err == nil; n-- {
		id, until := r.id(), r.int()
		s.moved.add(id, until+shift)
	}
	for n := r.count("once-only keys", 2); n > 0 && r.err == nil; n-- {
		key, until := string(r.bytes()), r.int()
		if r.err == nil {
			s.once.restore(key, until)
		}
	}
	for n := r.count("samples", 3); n > 0 && r.err == nil; n-- {
		period, failed := r.int(), r.uint()
		sum := &Sample{Failed: failed}
		for k := r.count("latency buckets", 1); k > 0 && r.err == nil; k-- {
			sum.Latency = append(sum.Latency, r.uint())
		}
		if len(sum.Latency) > LatencyBuckets {
			return nil, fmt.Errorf("a sample has %d latency buckets, past %d", len(sum.Latency), LatencyBuckets)
		}
		if s.samples.byPeriod == nil {
			s.samples.byPeriod = map[int64]*Sample{}
		}
		s.samples.byPeriod[period] = sum
	}
	var rates []rateSample
	for n := r.count("estimator samples", 2); n > 0 && r.err == nil; n-- {
		at, total := r.int(), r.uint()
		if k := len(rates); r.err == nil && k > 0 && (at < rates[k-1].at.UnixNano()-shift || total < rates[k-1].total) {
			return nil, errors.New("the estimator's samples go back in time or in count")
		}
		rates = append(rates, rateSample{at: time.Unix(0, at+shift), total: total})
	}
	if r.err != nil {
		return nil, r.err
	}
	s.est.samples = rates
	heap.Init(&s.once.order) // a body this store wrote is in order already; another may not be
	if len(r.b) > 0 {
		return nil, fmt.Errorf("%d bytes past its end", len(r.b))
	}
	if err := s.restoreLine(line, lane, admitted, keepTickets); err != nil {
		return nil, err
	}
	return s, nil
}

// restoreLine puts the restored visitors in their slots and lists: each lane's
// waiters by ticket, the lists by time (oldest first, ties by ticket), the admitted
// in their order of admission.
func (s *MemoryStore) restoreLine(line, lane, admitted []*memVisitor, keepTickets bool) error {
	byTicket := func(a, b *memVisitor) int { return cmp.Compare(a.ticket, b.ticket) }
	slices.SortFunc(line, byTicket)
	slices.SortFunc(lane, byTicket)
	for i := 1; i < len(line); i++ {
		if line[i].ticket == line[i-1].ticket {
			return fmt.Errorf("ticket %d is held twice", line[i].ticket)
		}
	}
	for i := 1; i < len(lane); i++ {
		if lane[i].ticket == lane[i-1].ticket {
			return fmt.Errorf("pass ticket %d is held twice", lane[i].ticket)
		}
	}

	s.base = s.nextTicket
	if len(line) > 0 {
		s.base = line[0].ticket
		if span := s.nextTicket - s.base; span > uint64(4*len(line)+maxSlack) && !keepTickets {
			s.base = s.nextTicket - uint64(len(line))
			for i, v := range line {
				v.ticket = s.base + uint64(i)
			}
		}
		s.slots = make([]*memVisitor, s.nextTicket-s.base)
		for _, v := range line {
			s.slots[v.ticket-s.base] = v
		}
	}
	l := &s.pass
	l.base = l.next
	if len(lane) > 0 {
		l.base = lane[0].ticket - PassLane
		if span := l.next - l.base; span > uint64(4*len(lane)+maxSlack) {
			l.base = l.next - uint64(len(lane))
			for i, v := range lane {
				v.ticket = PassLane + l.base + uint64(i)
			}
		}
		l.slots = make([]*memVisitor, l.next-l.base)
		for _, v := range lane {
			l.slots[l.slot(v)] = v
		}
	}
	l.held = len(lane)
	s.rebuildLiveLocked()
	l.live.rebuild(len(l.slots), func(i int) int32 {
		if v := l.slots[i]; v != nil && !v.away {
			return 1
		}
		return 0
	})

	queued := append(slices.Clone(line), lane...)
	slices.SortStableFunc(queued, func(a, b *memVisitor) int { return cmp.Compare(a.at, b.at) })
	for _, v := range queued {
		if v.away {
			s.gone.pushBack(v)
			s.away++
			continue
		}
		s.heard.pushBack(v)
		s.waiting++
		if v.pass {
			l.waiting++
		}
	}
	for _, v := range admitted {
		at := v.at
		v.at = v.admission.at // pushBack records v.at as the admission
		s.byAdmission.pushBack(v)
		v.at = at
	}
	slices.SortStableFunc(admitted, func(a, b *memVisitor) int { return cmp.Compare(a.at, b.at) })
	for _, v := range admitted {
		s.active.pushBack(v)
	}
	return nil
}

// restore remembers key until the instant until, unless it has passed.
func (o *onceKeys) restore(key string, until int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, seen := o.until[key]; seen {
		return
	}
	if o.until == nil {
		o.until = make(map[string]int64)
	}
	o.until[key] = until
	o.order = append(o.order, onceEntry{key: key, until: until})
}

// periodSample is one control period's sample, as the state file keeps it.
type periodSample struct {
	period int64
	Sample
}

// saved is the samples kept, by period.
func (m *samples) saved() []periodSample {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]periodSample, 0, len(m.byPeriod))
	for p, sum := range m.byPeriod {
		out = append(out, periodSample{p, Sample{Latency: slices.Clone(sum.Latency), Failed: sum.Failed}})
	}
	slices.SortFunc(out, func(a, b periodSample) int { return cmp.Compare(a.period, b.period) })
	return out
}
