package waitingroom

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// Push timing for waiting WebSockets.
const (
	// pushEvery is how often the hub recomputes the positions of its waiters (one
	// Positions call for all of them) and pushes those that changed.
	pushEvery = 500 * time.Millisecond
	// resendEvery is how often the hub looks for waiters owed a message because they
	// heard nothing for a while (see resendAfter): at every round, and once between.
	// The finer this is, the closer to maxSilence a resend can go, and the fewer
	// messages an idle line costs: at 100,000 waiters each message a second fewer per
	// waiter is 100,000 writes a second.
	resendEvery = pushEvery / 2
	// maxSilence is the longest a waiter goes without a message, changed or not, so a
	// page can tell a live connection from a stuck one.
	maxSilence = 2 * time.Second
	// heartbeatBatch is how many waiters one Heartbeat call carries.
	heartbeatBatch = 1000
)

// hub holds this instance's waiting WebSockets and keeps them told: positions on a
// short period (computed for all local waiters in one store call, so the cost does not
// grow into one store command per waiter), admission as soon as the store announces it,
// and their liveness (a connected waiter keeps the place without polling).
type hub struct {
	rm *room

	mu      sync.Mutex
	waiters map[VisitorID]*waiterSockets
	closed  bool
}

// waiterSockets are the open sockets (tabs) of one waiter; they share the place.
type waiterSockets struct {
	ticket  uint64
	sockets []*socket
	beatAt  time.Time // when the store last heard of the waiter from this hub (wall clock)
}

func newHub(rm *room) *hub {
	return &hub{rm: rm, waiters: make(map[VisitorID]*waiterSockets)}
}

// add registers s for the waiter id; false when the hub is shutting down.
func (hb *hub) add(id VisitorID, ticket uint64, s *socket) bool {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if hb.closed {
		return false
	}
	ws := hb.waiters[id]
	if ws == nil {
		// The upgrade itself was heard of: the first beat is due an interval on.
		ws = &waiterSockets{ticket: ticket, beatAt: time.Now()}
		hb.waiters[id] = ws
	}
	ws.sockets = append(ws.sockets, s)
	return true
}

func (hb *hub) remove(id VisitorID, s *socket) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	ws := hb.waiters[id]
	if ws == nil {
		return
	}
	for i, x := range ws.sockets {
		if x == s {
			ws.sockets = append(ws.sockets[:i], ws.sockets[i+1:]...)
			break
		}
	}
	if len(ws.sockets) == 0 {
		delete(hb.waiters, id)
	}
}

// each calls fn for every socket of id.
func (hb *hub) each(id VisitorID, fn func(*socket)) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if ws := hb.waiters[id]; ws != nil {
		for _, s := range ws.sockets {
			fn(s)
		}
	}
}

// admitted is the store's announcement of admissions (from any instance).
func (hb *hub) admitted(ids []VisitorID) {
	for _, id := range ids {
		hb.each(id, (*socket).admit)
	}
}

// closeAll ends every socket with a reconnect hint (the config is going away; the page
// reconnects to the new one and keeps its place).
func (hb *hub) closeAll() {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	hb.closed = true
	for _, ws := range hb.waiters {
		for _, s := range ws.sockets {
			s.shutdown()
		}
	}
}

func (hb *hub) run(ctx context.Context) {
	cancel := hb.rm.store.Subscribe(hb.admitted)
	defer cancel()
	tick := time.NewTicker(resendEvery)
	defer tick.Stop()
	heartbeatEvery := min(time.Duration(hb.rm.h.QueueTTL)/3, 10*time.Second)
	var p pushRound
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if n%int(pushEvery/resendEvery) != 0 {
			// Between rounds: the last round's positions, to whoever is owed one.
			if p.fresh {
				p.offerAll(ctx, hb, hb.rm.h.clock.Now(), false)
			}
			continue
		}
		p.collect(hb)
		if len(p.ids) == 0 {
			continue
		}
		now := hb.rm.h.clock.Now()
		p.heartbeat(ctx, hb, now, heartbeatEvery)
		p.push(ctx, hb, now)
	}
}

// pushRound is the hub loop's scratch space, reused every round so a push to 100k
// waiters allocates next to nothing.
type pushRound struct {
	waiters   []roundWaiter
	beats     []VisitorID // the waiters the round's heartbeat covers
	ids       []VisitorID
	tickets   []uint64
	positions []int
	fresh     bool   // positions are the last round's answer for ids
	frame     []byte // the waiter being offered a position: its message, framed
}

// roundWaiter is one waiter as a round collects it.
type roundWaiter struct {
	ticket uint64
	id     VisitorID
	beatAt time.Time
}

// collect lists the hub's waiters in line order (by ticket). The order is the same
// from round to round, so a waiter written to late in one tick is late in the next as
// well and its silence stays what due allows; the map's own order changes every
// time, and a long tick would add its length to some waiters' silences. It also
// puts the head of the line first.
func (p *pushRound) collect(hb *hub) {
	p.waiters, p.fresh = p.waiters[:0], false
	hb.mu.Lock()
	for id, ws := range hb.waiters {
		p.waiters = append(p.waiters, roundWaiter{ws.ticket, id, ws.beatAt})
	}
	hb.mu.Unlock()
	slices.SortFunc(p.waiters, func(a, b roundWaiter) int { return cmp.Compare(a.ticket, b.ticket) })
	p.ids, p.tickets = p.ids[:0], p.tickets[:0]
	for _, w := range p.waiters {
		p.ids = append(p.ids, w.id)
		p.tickets = append(p.tickets, w.ticket)
	}
	if cap(p.positions) < len(p.ids) {
		p.positions = make([]int, len(p.ids))
	}
	p.positions = p.positions[:len(p.ids)]
}

// heartbeat tells the store that the waiters last heard of every ago or more are
// still there. Each waiter's beat is timed from its own arrival, so the beats spread
// over the interval instead of falling on one round: at 100,000 waiters a beat of
// everyone at once was a hundred store calls that held up the pushes of that round.
// A round beats at most twice its fair share, so a crowd that arrived together
// spreads out after one interval, and no beat is later than half an interval.
func (p *pushRound) heartbeat(ctx context.Context, hb *hub, now time.Time, every time.Duration) {
	wall := time.Now()
	limit := len(p.waiters)
	if rounds := int(every / pushEvery); rounds > 2 {
		limit = 2*len(p.waiters)/rounds + 1
	}
	p.beats = p.beats[:0]
	for _, w := range p.waiters {
		if len(p.beats) == limit {
			break
		}
		if wall.Sub(w.beatAt) >= every {
			p.beats = append(p.beats, w.id)
		}
	}
	for i := 0; i < len(p.beats); i += heartbeatBatch {
		batch := p.beats[i:min(i+heartbeatBatch, len(p.beats))]
		if err := hb.rm.store.Heartbeat(ctx, batch, now); err != nil {
			hb.rm.storeError("heartbeat", err)
			return // the rest are still due, and are beaten next round
		}
		hb.beaten(batch, wall)
	}
}

// beaten records that ids were heard of at wall.
func (hb *hub) beaten(ids []VisitorID, wall time.Time) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	for _, id := range ids {
		if ws := hb.waiters[id]; ws != nil {
			ws.beatAt = wall
		}
	}
}

// push computes every local waiter's position in one store call and hands each socket
// its news. A waiter whose ticket is no longer queued was admitted (the announcement
// may have been lost: this is the reconciliation) or lost the place.
func (p *pushRound) push(ctx context.Context, hb *hub, now time.Time) {
	if err := hb.rm.store.Positions(ctx, p.tickets, p.positions); err != nil {
		hb.rm.storeError("positions", err)
		return
	}
	p.fresh = true
	p.offerAll(ctx, hb, now, true)
}

// offerAll offers every waiter of the round its position (see socket.due). settle
// says to settle too what became of those no longer queued, which the round's own
// offers do once; the offers between rounds leave them be.
func (p *pushRound) offerAll(ctx context.Context, hb *hub, now time.Time, settle bool) {
	h := hb.rm.h
	st := hb.rm.stats.Load()
	pol := h.policyAt(now)
	rate, rateKnown := h.throughput(pol)
	// Most rounds owe most waiters nothing (see socket.due), so a waiter's view and
	// its frame are built only when one of its sockets is due, and once for all of them.
	var (
		pos int   // the position being offered
		v   *view // its view, once built
	)
	offerTo := func(s *socket) {
		if !s.due(pos, now) {
			return
		}
		if v == nil {
			built := h.viewAt(pos, st, rate, rateKnown, pol)
			built.Type = "position"
			v = &built
			p.frame = v.appendFrame(p.frame[:0])
		}
		s.push(p.frame, v)
	}
	offer := func(id VisitorID, position int) {
		pos, v = position, nil
		hb.each(id, offerTo)
	}
	for i, id := range p.ids {
		if pos := p.positions[i]; pos > 0 {
			offer(id, pos)
			continue
		}
		if !settle {
			continue
		}
		status, err := hb.rm.store.Status(ctx, id, now)
		if err != nil {
			hb.rm.storeError("status", err)
			continue
		}
		switch status.State {
		case Admitted:
			hb.each(id, (*socket).admit)
		case Unknown:
			hb.each(id, (*socket).lose)
		case Queued:
			// Still queued under another ticket: an event's lottery reassigned them.
			hb.retick(id, status.Ticket)
			offer(id, status.Position)
		}
	}
}

// retick records a waiter's new ticket after a lottery.
func (hb *hub) retick(id VisitorID, ticket uint64) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if ws := hb.waiters[id]; ws != nil {
		ws.ticket = ticket
	}
}
