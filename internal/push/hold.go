package push

import (
	"context"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// holds are the waiters whose sockets came or went since the last round told a
// queue.Holder store, and when the hub last renewed its lease. One set for both: a
// waiter that left and came back between two rounds is held, one that came and left
// is let go; what counts is whether it has a socket when the round looks.
type holds struct {
	dirty     map[queue.VisitorID]struct{}
	renewedAt time.Time // wall clock
}

// mark records that id's sockets came or went. Called with the hub's lock held.
func (h *holds) mark(id queue.VisitorID) {
	if h.dirty == nil {
		h.dirty = make(map[queue.VisitorID]struct{})
	}
	h.dirty[id] = struct{}{}
}

// markHold records, for a Holder store, that id's sockets came or went. Called with
// the hub's lock held.
func (hb *Hub) markHold(id queue.VisitorID) {
	if hb.holder != nil {
		hb.holds.mark(id)
	}
}

// holdsPending reports whether a round owes the store news of holds.
func (hb *Hub) holdsPending() bool {
	if hb.holder == nil {
		return false
	}
	hb.mu.Lock()
	defer hb.mu.Unlock()
	return len(hb.holds.dirty) > 0
}

// hold tells a Holder store whom this hub took and let go of since the last round,
// and renews the hub's lease at least every interval: a held waiter is heard of
// through the lease, so the store hears nothing per waiter between a socket's
// opening and its closing. News the store did not take is kept for the next round.
func (p *pushRound) hold(ctx context.Context, hb *Hub, now time.Time, every time.Duration) {
	wall := time.Now()
	p.beats, p.releases = p.beats[:0], p.releases[:0]
	hb.mu.Lock()
	for id := range hb.holds.dirty {
		if ws := hb.waiters[id]; ws != nil && len(ws.sockets) > 0 {
			p.beats = append(p.beats, id)
		} else {
			p.releases = append(p.releases, id)
		}
	}
	clear(hb.holds.dirty)
	renew := wall.Sub(hb.holds.renewedAt) >= every
	hb.mu.Unlock()

	if len(p.releases) > 0 {
		if err := hb.holder.Release(ctx, p.releases, now); err != nil {
			hb.room.StoreError("release", err)
			hb.remark(p.releases)
		}
	}
	if len(p.beats) == 0 && !renew {
		return
	}
	if err := hb.holder.Hold(ctx, p.beats, now); err != nil {
		hb.room.StoreError("hold", err)
		hb.remark(p.beats)
		return
	}
	hb.mu.Lock()
	hb.holds.renewedAt = wall
	hb.mu.Unlock()
}

// remark puts back news the store did not take.
func (hb *Hub) remark(ids []queue.VisitorID) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	for _, id := range ids {
		hb.markHold(id)
	}
}
