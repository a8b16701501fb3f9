package queue

import (
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/draw"
)

// The store's side of a room's draws (docs/fairness.md): a draw's record, which holds
// the seed from the commit on (only the room decides when to show it), and the
// admissions counted by reason. What is drawn, and how an order follows from a seed,
// is internal/draw's; running a draw across a fleet is internal/fairness's. The store
// keeps what every instance must agree on, and does atomically what must not be
// torn: the first commit wins, the close takes the entrants at one instant, each
// chunk of the drawn order moves its waiters at once.

// DrawState is how far a draw has got.
type DrawState uint8

const (
	// DrawOpen: committed, entries open.
	DrawOpen DrawState = iota + 1
	// DrawClosed: entries closed, the entrants taken; an event's drawn order is
	// being applied to the line (Done places so far).
	DrawClosed
	// DrawDrawn: the order is in the line (an event's), or the picks are over (a
	// random draw's); the seed may be shown.
	DrawDrawn
)

func (s DrawState) String() string {
	switch s {
	case DrawOpen:
		return "open"
	case DrawClosed:
		return "closed"
	case DrawDrawn:
		return "drawn"
	}
	return "none"
}

// DrawKeep is how long a store keeps a draw's record after it was committed, at the
// least: the draw page answers for it that long.
const DrawKeep = 30 * 24 * time.Hour

// DrawRecord is a draw as the store keeps it.
type DrawRecord struct {
	// ID is the draw's id (draw.CheckDraw): "event-<start>" or "random-<committed>".
	ID string
	// Lottery is the event's key (settings.Event.Key) for an event's draw, "" for a
	// random draw. The commit marks that event's lottery drawn for Shuffle, so a
	// release that only knows Shuffle never draws over a committed draw.
	Lottery string
	// Seed is the draw's seed, from the commit on; EntryKey is the key entry ids are
	// made with (internal/fairness), never shown.
	Seed     draw.Seed
	EntryKey [32]byte
	// Committed is when the draw was committed, to the second.
	Committed time.Time
	// PublicKey signs the draw's receipts, fixed at the commit.
	PublicKey string
	State     DrawState
	// Close is the last ticket issued when entries closed (0 while open): later
	// tickets are no entrants.
	Close uint64
	// Entrants counts the entrants, from the close on: the ordinary lane's held
	// places at the close, and for a random draw every waiter it picked before.
	Entrants int
	// First is where an event's drawn order goes: place p is ticket First+p, a block
	// of Entrants tickets the close set aside behind everyone queued then.
	First uint64
	// Done counts the places of an event's order moved into the line so far.
	Done int
}

// Random reports whether the draw is mode random's (else an event's lottery).
func (r DrawRecord) Random() bool { return r.Lottery == "" }

// Reason is why a visitor was let in: every admission has one (draw.Reasons names
// them, in this order).
type Reason uint8

const (
	// ReasonInOrder: the head of the ordinary line at or past the line's furthest
	// admission so far, or at once into a room with room to spare.
	ReasonInOrder Reason = iota
	// ReasonPass: the pass lane.
	ReasonPass
	// ReasonReturned: back after the line passed them (away, or a no-show queued
	// again), and so first in.
	ReasonReturned
	// ReasonHandoff: an admitted session moved to another device (Move). Not in
	// Stats.AdmittedTotal: it was admitted once already.
	ReasonHandoff
	// ReasonAdmin: AdmitNow.
	ReasonAdmin
	// ReasonRandom: a pick of a committed random draw (Limits.Picks) or of mode
	// random without one.
	ReasonRandom
	// NumReasons counts the reasons.
	NumReasons
)

func (r Reason) String() string {
	if r < NumReasons {
		return draw.Reasons()[r]
	}
	return "unknown"
}

// ByReason counts admissions by their reason.
type ByReason [NumReasons]uint64

// Minute is the admissions of one minute, by reason.
type Minute struct {
	// At is the minute's start.
	At time.Time
	ByReason
}

// AdmissionsKept is how far back a store keeps its admissions by reason, a minute at
// a time.
const AdmissionsKept = 24 * time.Hour
