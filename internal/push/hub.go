package push

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// Hub holds this instance's waiting WebSockets of one room and keeps them told:
// positions on a short period (computed for all local waiters in one store call, so
// the cost does not grow into one store command per waiter), admission as soon as the
// store announces it, and their liveness (a connected waiter keeps the place without
// polling).
type Hub struct {
	room           Room
	store          queue.Store
	heartbeatEvery atomic.Int64 // nanoseconds; follows a changed queue_ttl (SetHeartbeatEvery)

	// holder is store as a queue.Holder, or nil: then the hub hears of every waiter
	// itself (see pushRound.heartbeat), else it holds them (hold.go).
	holder queue.Holder

	// calls counts the store calls the sockets' readers have under way (a "leave"),
	// so that Wait can tell when none is left; none starts once the hub is closed.
	calls sync.WaitGroup

	mu      sync.Mutex
	waiters map[queue.VisitorID]*waiterSockets
	closed  bool
	changed bool // waiters came, went or were reticketed since the last round listed them
	holds   holds

	idle idleWatch // the sockets whose clients are quiet (idle.go)
}

// waiterSockets are the open sockets (tabs) of one waiter; they share the place.
type waiterSockets struct {
	ticket  uint64
	sockets []*socket
	beatAt  time.Time // when the store last heard of the waiter from this hub (wall clock)
}

// Room is what a hub needs of the room whose waiters it holds.
type Room interface {
	// Now is the room's clock (tests inject their own).
	Now() time.Time
	// Teller returns what the waiter at a position is told at now. A push round asks
	// for a teller once, and calls it once per position it frames, so what the view
	// holds besides the position (people waiting, ETA) is read once per round.
	Teller(now time.Time) func(position int) page.View
	// Left is told of a waiter who gave up the place from the page, after the store
	// let them go (once per waiter, however often the page says so).
	Left(id queue.VisitorID)
	// StoreError reports a store call that failed; the room logs it, rate-limited.
	StoreError(op string, err error)
	// Message is the operator's message to the line now ("" for none).
	Message() string
}

// New returns the hub of room over store. A connected waiter is heard of (its place
// kept alive in the store) at least every heartbeatEvery.
func New(room Room, store queue.Store, heartbeatEvery time.Duration) *Hub {
	hb := &Hub{room: room, store: store, waiters: make(map[queue.VisitorID]*waiterSockets)}
	hb.heartbeatEvery.Store(int64(heartbeatEvery))
	hb.holder, _ = store.(queue.Holder)
	return hb
}

// add registers s for the waiter id; false when the hub is shutting down.
func (hb *Hub) add(id queue.VisitorID, ticket uint64, s *socket) bool {
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
		hb.changed = true
		hb.markHold(id)
	}
	ws.sockets = append(ws.sockets, s)
	return true
}

func (hb *Hub) remove(id queue.VisitorID, s *socket) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	ws := hb.waiters[id]
	if ws == nil {
		return
	}
	for i, x := range ws.sockets {
		if x == s {
			s.gone.Store(true)
			ws.sockets = append(ws.sockets[:i], ws.sockets[i+1:]...)
			break
		}
	}
	if len(ws.sockets) == 0 {
		delete(hb.waiters, id)
		hb.changed = true
		hb.markHold(id)
	}
}

// each calls fn for every socket of id.
func (hb *Hub) each(id queue.VisitorID, fn func(*socket)) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if ws := hb.waiters[id]; ws != nil {
		for _, s := range ws.sockets {
			fn(s)
		}
	}
}

// admitted is the store's announcement of admissions (from any instance).
func (hb *Hub) admitted(ids []queue.VisitorID) {
	for _, id := range ids {
		hb.each(id, (*socket).admit)
	}
}

// Lose tells id's sockets on this instance that the place is lost (it moved to
// another device): each is closed as a lost place's is, and its page reloads to be
// told why.
func (hb *Hub) Lose(id queue.VisitorID) { hb.each(id, (*socket).lose) }

// moved is the store's announcement of places moved to another device (from any
// instance): the sockets of the ids that gave them away are told they are lost.
func (hb *Hub) moved(ids []queue.VisitorID) {
	for _, id := range ids {
		hb.Lose(id)
	}
}

// CloseAll ends every socket with a reconnect hint (the config is going away; the page
// reconnects to the new one and keeps its place).
func (hb *Hub) CloseAll() {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	hb.closed = true
	for _, ws := range hb.waiters {
		for _, s := range ws.sockets {
			s.shutdown()
		}
	}
	hb.idle.close()
}

// beginCall reports whether a socket's reader may call the store, and counts the
// call until endCall; once the hub is closed (the room is stopping) none may.
func (hb *Hub) beginCall() bool {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if hb.closed {
		return false
	}
	hb.calls.Add(1)
	return true
}

func (hb *Hub) endCall() { hb.calls.Done() }

// Wait returns, after CloseAll, once no socket's reader has a store call under way,
// so that none is left to call the store once the room lets go of it. It waits for
// the calls alone, each bounded by the store's timeout, not for the sockets to finish
// their closing handshakes: a reload must not wait on its clients.
func (hb *Hub) Wait() { hb.calls.Wait() }

// Run is the hub's loop, until ctx ends. It ticks every resendEvery to resend what is owed, and every
// pushEvery starts a round: the store is asked for everyone's position beside the
// loop (fetch), and the answer is applied in the loop, so sockets are written to by
// this goroutine alone (and by their own writers, see socket). It returns only once
// a round's store calls have ended too: the room lets go of the store when Run
// returns, and a call after that would find its client closed.
func (hb *Hub) Run(ctx context.Context) {
	var fetches sync.WaitGroup
	defer fetches.Wait()
	cancel := hb.store.Subscribe(hb.admitted)
	defer cancel()
	if mv, ok := hb.store.(queue.MoveAnnouncer); ok {
		defer mv.SubscribeMoved(hb.moved)()
	}
	tick := time.NewTicker(resendEvery)
	defer tick.Stop()
	var p pushRound
	told := hb.room.Message() // what the sockets were told as they connected
	fetched := make(chan error, 1)
	fetching := false
	for ticks := 1; ; {
		select {
		case <-ctx.Done():
			return
		case err := <-fetched:
			fetching = false
			if err != nil {
				hb.room.StoreError("positions", err)
				continue
			}
			p.apply(hb, hb.room.Now())
			continue
		case <-tick.C:
			ticks++
		}
		hb.tellChanged(&told)
		now := hb.room.Now()
		p.resendDue(hb, now)
		if ticks%int(pushEvery/resendEvery) != 0 || fetching {
			continue
		}
		p.collect(hb)
		if len(p.ids) == 0 && !hb.holdsPending() {
			continue
		}
		fetching = true
		every := time.Duration(hb.heartbeatEvery.Load())
		fetches.Go(func() { fetched <- p.fetch(ctx, hb, now, every) }) // fetched has room for it
	}
}

// beaten records that ids were heard of at wall.
func (hb *Hub) beaten(ids []queue.VisitorID, wall time.Time) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	for _, id := range ids {
		if ws := hb.waiters[id]; ws != nil {
			ws.beatAt = wall
		}
	}
}

// retick records a waiter's new ticket after a lottery.
func (hb *Hub) retick(id queue.VisitorID, ticket uint64) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if ws := hb.waiters[id]; ws != nil && ws.ticket != ticket {
		ws.ticket = ticket
		hb.changed = true
	}
}

// SetHeartbeatEvery changes how often connected waiters are heard of, from the next
// round on (the room's queue_ttl was changed at run time).
func (hb *Hub) SetHeartbeatEvery(d time.Duration) { hb.heartbeatEvery.Store(int64(d)) }

// HeartbeatEvery is how often connected waiters are heard of now.
func (hb *Hub) HeartbeatEvery() time.Duration { return time.Duration(hb.heartbeatEvery.Load()) }
