package room

import (
	"context"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/fairness"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
)

// The room's part in its draws (internal/fairness runs them): what its settings ask
// of them, what its admissions do meanwhile, and the receipts and pages it gives.

// fleetReads is the format level every live instance reads, 0 before the fleet record
// was first read: nothing of a new format is written before it is known.
func (rm *Room) fleetReads() int {
	if f := rm.fleet.Load(); f != nil {
		return f.Reads
	}
	return 0
}

// limitsOf are the store's limits under s: its settings', and the counts by reason
// once every live instance reads them.
func (rm *Room) limitsOf(s *settings.Snapshot) queue.Limits {
	lim := s.Limits()
	lim.Reasons = rm.fleetReads() >= 2
	return lim
}

// drawn does what is due of the room's draws under s at now, before a join or (step)
// an admission step that may let in free, and returns the limits that step or join
// runs under: held while an event's order is placed, a random draw's picks.
func (rm *Room) drawn(ctx context.Context, s *settings.Snapshot, now time.Time, step bool, free int) queue.Limits {
	lim := rm.limitsOf(s)
	w := fairness.Want{Reads: rm.fleetReads(), Step: step, Free: free, Random: s.Mode == queue.ModeRandom && !s.Prequeue}
	if ev := s.Event; ev != nil && ev.Shuffle {
		w.Lottery, w.Start, w.Prequeue = ev.Key(), ev.Start, s.Prequeue
	}
	plan := rm.draws.Advance(ctx, rm.cfg.Store, now, w, rm.storeError)
	lim.Hold = lim.Hold || plan.Hold
	if lim.Random {
		lim.Picks = plan.Picks
	}
	return lim
}

// tellReceipt adds to a queued waiter's view the receipt of their entry and their
// draw's page. A place made by this very request gets the page and no receipt: a
// signature costs several times the rest of a join, and a flood of new visitors
// would pay it for receipts nobody keeps; the waiting page asks again at once, and
// every later answer carries it.
func (rm *Room) tellReceipt(v *page.View, d *Decision, now time.Time) {
	if v.DrawURL = rm.draws.PagePath(); v.DrawURL == "" || !d.joined.Before(now) || d.Status.Ticket == 0 {
		return
	}
	b, url := rm.draws.Receipt(fairness.Holder{ID: d.Visitor, Ticket: d.Status.Ticket, Since: d.joined, Pass: d.passPlace})
	if b != nil {
		v.Receipt, v.DrawURL = b, url
	}
}

// DrawPage is the public page of draw id ("" for the room's current draw, draw.FIFO
// for its FIFO page): fairness.ErrNoDraw when the store holds no such draw.
func (rm *Room) DrawPage(ctx context.Context, id string) (*fairness.Page, error) {
	return rm.draws.Page(ctx, rm.cfg.Store, id, rm.cfg.Clock.Now())
}

// DrawEntries is closed draw id's entries list and its hash.
func (rm *Room) DrawEntries(ctx context.Context, id string) ([]byte, string, error) {
	return rm.draws.Entries(ctx, rm.cfg.Store, id)
}
