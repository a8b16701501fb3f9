package push

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// pushRound is the hub loop's scratch space, reused every round so a push to 100k
// waiters allocates next to nothing.
type pushRound struct {
	waiters   []roundWaiter
	beats     []queue.VisitorID // the waiters the round's heartbeat covers
	releases  []queue.VisitorID // the waiters the round lets go of (a Holder store)
	ids       []queue.VisitorID
	tickets   []uint64
	positions []int
	settled   []settled // what became of the listed waiters no longer queued
	// answered is when the store last answered a round (hub clock); zero before the
	// first answer. Positions older than staleAfter are not resent.
	answered time.Time

	// resends lists every message written, oldest first, from head on: the order in
	// which waiters come to be owed a resend (see resendDue).
	resends []resend
	head    int

	frame    []byte // the last message framed in this tick
	framedAt int    // the position frame is for; 0 when none is framed yet

	changeGap time.Duration // for this list's size (see changeGap)
}

// resend is one message written to a socket at at, which makes the socket owed
// another at at + resendAfter unless something newer went out meanwhile.
type resend struct {
	s  *socket
	at time.Time
}

// settled is the store's answer about p.waiters[i], who was not queued under the
// ticket listed.
type settled struct {
	i      int
	status queue.Status
}

// roundWaiter is one waiter as a round lists it. ws is the hub's own record, so the
// offers of a round reach a waiter's sockets without a map lookup each.
type roundWaiter struct {
	ticket uint64
	id     queue.VisitorID
	ws     *waiterSockets
}

// collect lists the hub's waiters in line order (by ticket), which puts the head of
// the line first. The list is made again only when waiters came, went or were
// reticketed: a line that waits quietly is listed once.
func (p *pushRound) collect(hb *Hub) {
	hb.mu.Lock()
	if !hb.changed {
		hb.mu.Unlock()
		return
	}
	hb.changed = false
	clear(p.waiters) // the old list's records may belong to waiters gone
	p.waiters = p.waiters[:0]
	for id, ws := range hb.waiters {
		p.waiters = append(p.waiters, roundWaiter{ws.ticket, id, ws})
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
	p.changeGap = changeGap(len(p.waiters))
}

// heartbeat tells the store that the waiters last heard of every ago or more are
// still there. Each waiter's beat is timed from its own arrival, so the beats spread
// over the interval instead of falling on one round: at 100,000 waiters a beat of
// everyone at once was a hundred store calls that held up the pushes of that round.
// A round beats at most twice its fair share, so a crowd that arrived together
// spreads out after one interval, and no beat is later than half an interval.
func (p *pushRound) heartbeat(ctx context.Context, hb *Hub, now time.Time, every time.Duration) {
	if hb.holder != nil {
		p.hold(ctx, hb, now, every)
		return
	}
	wall := time.Now()
	limit := len(p.waiters)
	if rounds := int(every / pushEvery); rounds > 2 {
		limit = 2*len(p.waiters)/rounds + 1
	}
	p.beats = p.beats[:0]
	hb.mu.Lock()
	for _, w := range p.waiters {
		if len(p.beats) == limit {
			break
		}
		if len(w.ws.sockets) > 0 && wall.Sub(w.ws.beatAt) >= every {
			p.beats = append(p.beats, w.id)
		}
	}
	hb.mu.Unlock()
	for i := 0; i < len(p.beats); i += heartbeatBatch {
		batch := p.beats[i:min(i+heartbeatBatch, len(p.beats))]
		if err := hb.store.Heartbeat(ctx, batch, now); err != nil {
			hb.room.StoreError("heartbeat", err)
			return // the rest are still due, and are beaten next round
		}
		hb.beaten(batch, wall)
	}
}

// fetch asks the store what a round needs: the heartbeats due, every listed waiter's
// position in one call, and what became of those no longer queued (admitted: the
// announcement may have been lost, and this is the reconciliation; or the place was
// lost). It runs beside the hub loop, which goes on resending while the store
// answers: on a busy machine a store call can take a good part of a second, and the
// resends owed meanwhile must not wait for it. It uses the round's lists, which the
// loop leaves alone until fetch returns; the loop then applies the answer.
func (p *pushRound) fetch(ctx context.Context, hb *Hub, now time.Time, heartbeatEvery time.Duration) error {
	p.heartbeat(ctx, hb, now, heartbeatEvery)
	if len(p.tickets) == 0 {
		return nil // the round only let go of waiters
	}
	if err := hb.store.Positions(ctx, p.tickets, p.positions); err != nil {
		return err
	}
	p.settled = p.settled[:0]
	for i, w := range p.waiters {
		if p.positions[i] > 0 {
			continue
		}
		status, err := hb.store.Listen(ctx, w.id, now)
		if err != nil {
			hb.room.StoreError("status", err)
			continue // settled at a later round
		}
		p.settled = append(p.settled, settled{i, status})
	}
	return nil
}

// apply offers every listed socket its position (see socket.due), and ends the sockets
// of waiters who were admitted or lost their place.
func (p *pushRound) apply(hb *Hub, now time.Time) {
	p.answered = now
	o := p.figures(hb, now)
	next := 0 // into p.settled, which is in list order
	for i, w := range p.waiters {
		if pos := p.positions[i]; pos > 0 {
			p.offerAll(hb, &o, w.ws, pos)
			continue
		}
		if next == len(p.settled) || p.settled[next].i != i {
			continue
		}
		status := p.settled[next].status
		next++
		switch status.State {
		case queue.Admitted:
			hb.each(w.id, (*socket).admit)
		case queue.Unknown:
			hb.each(w.id, (*socket).lose)
		case queue.Queued:
			if status.Position == 0 {
				// A no-show its socket alone does not bring back (queue.Store.Listen):
				// the page asks with a request, which does.
				hb.each(w.id, (*socket).miss)
				continue
			}
			// Still queued under another ticket: an event's lottery reassigned them.
			hb.retick(w.id, status.Ticket)
			p.offerAll(hb, &o, w.ws, status.Position)
		}
	}
}

// resendDue writes again to every socket that has heard nothing for resendAfter: the
// latest position the store gave it, with the figures of now. The queue of messages
// written is in the order they went out, so the sockets owed a resend are at its
// front, and a tick costs what it resends, not a look at every waiter: the hub ticks
// often (resendEvery), so that a resend goes out close to when it is owed and the
// writes of a second spread over it instead of coming in a few bursts.
func (p *pushRound) resendDue(hb *Hub, now time.Time) {
	if p.answered.IsZero() || now.Sub(p.answered) > staleAfter {
		// The store has not answered for a while: no position is known to be true, and
		// the waiters hear nothing until it does.
		return
	}
	// No hub lock is held: a pass can be long on a busy machine, and admissions
	// (hub.admitted) and arriving sockets must not wait for it. A socket is told
	// here only through its own lock (push), and gone says it left the hub.
	var o figures
	for ; p.head < len(p.resends); p.head++ {
		r := p.resends[p.head]
		if now.Sub(r.at) < resendAfter {
			break
		}
		p.resends[p.head] = resend{}
		if r.s.gone.Load() || !r.s.lastOffered.Equal(r.at) {
			continue // closed, or written to since: a later entry stands for it
		}
		if o.tell == nil {
			o = p.figures(hb, now)
		}
		p.offer(&o, r.s, r.s.knownPosition) // the latest, which a busy line may not have told yet
	}
	if p.head > 1024 && p.head > len(p.resends)/2 {
		n := copy(p.resends, p.resends[p.head:])
		clear(p.resends[n:])
		p.resends, p.head = p.resends[:n], 0
	}
}

// figures are what every message of one tick carries besides its position.
type figures struct {
	now  time.Time
	tell func(position int) page.View
}

func (p *pushRound) figures(hb *Hub, now time.Time) figures {
	p.framedAt = 0
	return figures{now: now, tell: hb.room.Teller(now)}
}

// offerAll offers position to every socket of a waiter.
func (p *pushRound) offerAll(hb *Hub, o *figures, ws *waiterSockets, position int) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	for _, s := range ws.sockets {
		p.offer(o, s, position)
	}
}

// offer writes position to s if it is due (see socket.due), and queues the resend it
// will be owed. A message is framed once for all the sockets of a waiter: within a
// tick it depends on the position alone. Hub goroutine only.
func (p *pushRound) offer(o *figures, s *socket, position int) {
	if !s.due(position, o.now, p.changeGap) {
		return
	}
	if p.framedAt != position {
		v := o.tell(position)
		v.Type, v.Message = "position", "" // the message has frames of its own (message.go)
		p.frame, p.framedAt = appendFrame(&v, p.frame[:0]), position
	}
	s.push(p.frame)
	p.resends = append(p.resends, resend{s, o.now})
}
