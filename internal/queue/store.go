// Package queue is the line itself, with no Caddy in it: the Store interface both
// stores implement (one room's active set, queue and counters), the limits each
// decision is made under, the modes, the admission-throughput estimator behind every
// ETA, the embedded memory store, and the cache of sessions this instance confirmed.
package queue

import (
	"context"
	"time"
)

// Store holds one room's shared state: the active set, the queue and the counters.
// Every method that changes more than one thing does so atomically, so any number of
// handlers (on one Caddy or on many sharing the store) may call any method at once and
// capacity is still never exceeded.
//
// Times are passed in rather than read from a clock so that tests can drive a store with
// an injected clock and so that every instance agrees on what "now" means for one call.
type Store interface {
	// Join takes a brand-new visitor: when nobody waits and a slot is free (and the
	// limits allow it) the visitor is admitted at once, otherwise it is given the next
	// ticket and queued. A visitor id that is already known is reported as it stands and
	// not queued twice.
	Join(ctx context.Context, id VisitorID, now time.Time, lim Limits) (Status, error)

	// JoinPass takes a brand-new visitor who presents a valid pass: it counts one use of
	// the pass (fleet-wide, atomically) and joins the visitor in the pass lane, ahead of
	// every waiter without a pass and behind the pass holders already waiting, or admits
	// at once when no pass holder waits and a slot is free (capacity and rate hold). It
	// reports false when the pass has no use left: then nothing is joined and the caller
	// treats the visitor as an ordinary new visitor. Under Limits.NoQueue a visitor it
	// cannot admit is Rejected and the use is not counted. A visitor id that is already
	// known is reported as it stands, counting no use.
	JoinPass(ctx context.Context, id VisitorID, pass PassUse, now time.Time, lim Limits) (Status, bool, error)

	// Status reports where a visitor stands. For a waiter it also counts as being heard
	// from (the waiter's liveness is refreshed), so a page load or poll keeps the place;
	// an away waiter is back at once (Status.Returned). For an admitted visitor it is
	// not an arrival (Limits.ArriveTTL): the push hub and the waiting page's socket ask
	// it of a visitor who may never come.
	Status(ctx context.Context, id VisitorID, now time.Time) (Status, error)

	// Listen is Status as the waiting page's WebSocket asks it (on opening, and the
	// hub for a socket whose waiter is in no position): the same answer, hearing from
	// a waiter the same way, except for a no-show queued again and away (see Step): a
	// socket alone is not coming back, so Listen neither brings it back nor hears from
	// it, and reports it Queued at Position 0, Missed and not Returned. Only a page
	// request (Status) brings it back, so a client that only ever reopens the socket
	// has its turn once.
	Listen(ctx context.Context, id VisitorID, now time.Time) (Status, error)

	// Touch refreshes an admitted visitor's last-seen time, and marks one admitted from
	// the queue as arrived (Limits.ArriveTTL). It reports false when the visitor is not
	// admitted (session expired, revoked, removed, or a no-show sent back): the caller
	// then treats the request as a new visitor.
	Touch(ctx context.Context, id VisitorID, now time.Time) (bool, error)

	// Move gives visitor from's place to visitor to (a fresh id the caller minted), in
	// one atomic step: the same ticket and position, pass lane, away state and
	// arrival, or the same admitted session, now held by to, and from no longer
	// holds anything. It leaves a mark for from, kept as long as the place could
	// live (Limits.Keep, SessionTTL, SessionMax, whichever is longest), so that
	// Status(from) says Moved rather than Unknown and the device that held it can be
	// told why. It reports the place as to now holds it (a waiter is heard from, like
	// Status) and true; false, moving nothing, when from holds no place (unknown,
	// expired, moved already) or to is known. Counters other than Stats.Handoffs do
	// not change: nobody joined or left. See internal/room/handoff.go.
	Move(ctx context.Context, from, to VisitorID, now time.Time, lim Limits) (Status, bool, error)

	// Heartbeat marks waiters as heard from now, in one batch (the WebSocket hub calls it
	// for all waiters connected to this instance), bringing back any who were away but
	// a no-show queued again, which it leaves as it is (see Listen). Unknown ids are
	// ignored.
	Heartbeat(ctx context.Context, ids []VisitorID, now time.Time) error

	// Leave removes a visitor, queued or admitted, and reports whether it was there.
	// A freed slot is filled by the next Step.
	Leave(ctx context.Context, id VisitorID) (bool, error)

	// Step is the admission step: it drops admitted visitors not seen for SessionTTL
	// (and, with Limits.SessionMax, those admitted longer ago than that),
	// sends waiters not heard from for QueueTTL away and drops those not heard from for
	// AwayTTL (see Limits.AwayTTL), then admits present waiters while slots are free and
	// the rate budget lasts: from the head of the queue, or (Limits.Random) picked
	// uniformly among the present waiters. An away waiter is never admitted. With
	// Limits.Hold it admits nobody. The admitted ids are also announced to subscribers.
	//
	// Before admitting, with Limits.ArriveTTL, it gives back the slots of the visitors
	// admitted from the queue ArriveTTL or longer ago who have not arrived (no Touch
	// since): each is queued again as an away waiter, heard from now, in the pass lane
	// (ahead of every ordinary waiter, in any mode), so that coming back within AwayTTL
	// (Status: Returned and Missed) it goes in first. That is kept once: a no-show let
	// in from the place it kept, and missing that turn too, loses the place, so a
	// client that never arrives holds the head of the line for two turns at most. When
	// nobody is kept away (AwayTTL at or below QueueTTL) a no-show simply loses the
	// place. StepResult.NoShows counts them all.
	Step(ctx context.Context, now time.Time, lim Limits) (StepResult, error)

	// AdmitNow admits up to n present waiters from the head of the queue at once, beyond
	// capacity and beyond the rate budget if need be (an operator's "let the next n
	// in"), and announces them like Step does. The admissions still count against the
	// rate budget, so the steps that follow slow down to keep the rate over the window.
	// Silent waiters at the head are sent away (or dropped), not admitted.
	AdmitNow(ctx context.Context, n int, now time.Time, lim Limits) (StepResult, error)

	// Shuffle puts the waiters queued now, present and away, in a uniformly random order
	// (the lottery at the start of a scheduled event): the set of tickets stays, who
	// holds which one changes, so everyone who joins later is still behind all of them. It runs at most
	// once per key in the store's life, however many instances call it, and reports
	// whether this call shuffled.
	Shuffle(ctx context.Context, key string) (bool, error)

	// Reset empties the queue and the active set, and forgets the ids whose places
	// moved (Move). Counters and the secret are kept, and tickets keep growing, so a
	// cookie from before the reset is simply unknown.
	Reset(ctx context.Context) error

	// Overrides returns the room's runtime settings document (set through the admin
	// API and shared by every instance on this store), or nil when there is none.
	Overrides(ctx context.Context) ([]byte, error)

	// SwapOverrides replaces the runtime settings document with doc if it still is
	// old (as Overrides returned it; nil for none), and reports whether it did. A nil
	// or empty doc removes it. It is the write of a read, merge and write: a writer
	// that lost the race to another is refused, so it merges again on what the other
	// saved, and concurrent changes of different settings all survive.
	SwapOverrides(ctx context.Context, old, doc []byte) (bool, error)

	// Positions computes, in one call whatever the number of tickets, the 1-based
	// position of each ticket among the present waiters (present waiters ahead + 1). It
	// writes 0 for a ticket that is not present (admitted, left, expired or away: the
	// caller asks Status, which brings an away waiter back). out has the length of
	// tickets.
	Positions(ctx context.Context, tickets []uint64, out []int) error

	// Stats returns the room's counters.
	Stats(ctx context.Context) (Stats, error)

	// Secret returns the room's shared signing secret: the first candidate ever offered
	// wins and is returned to every later caller, so instances (and reloads) that were
	// not given a secret agree on one.
	Secret(ctx context.Context, candidate []byte) ([]byte, error)

	// Once reports true the first time key is offered and false every later time,
	// until the instant until (fleet-wide, for a shared store): the once-only check of
	// a proof of work, keyed by its challenge. A key offered at or after until is
	// refused (false): whatever it names has expired. Unlike the other methods it reads
	// the store's own clock (Redis's, on Redis), because the key must be kept until a
	// wall-clock instant whichever instance asks; the store may forget it after that.
	Once(ctx context.Context, key string, until time.Time) (bool, error)

	// Report adds s, what this instance measured of the shop in the control period
	// numbered period, to the room's sample of that period: fleet-wide, for a shared
	// store. A store keeps a period's sample for a few periods, no longer.
	Report(ctx context.Context, period int64, s Sample) error

	// Measured is the room's sample of the control period numbered period: every
	// report made for it, added up (empty when none was).
	Measured(ctx context.Context, period int64) (Sample, error)

	// Fleet records that this instance is live at now and reads the formats up to
	// level reads (FormatLevel), and reports the room's live instances (see
	// FleetWindows), this one included. On one instance's store it is this
	// instance alone.
	Fleet(ctx context.Context, reads int, now time.Time, live FleetWindows) (Fleet, error)

	// CommitDraw makes rec, an open draw, the room's current draw, unless the room's
	// current draw is not drawn yet or rec.ID is a draw the store holds: the first
	// offer wins, whoever makes it, as Secret's does, and a seed once committed is
	// never replaced. It returns the room's current draw as the store holds it then.
	// An event's draw (rec.Lottery) also marks that lottery drawn for Shuffle. The
	// record is kept for DrawKeep at least.
	CommitDraw(ctx context.Context, rec DrawRecord) (DrawRecord, error)

	// Draw returns draw id as the store holds it, or the room's current draw for id
	// ""; ok is false when there is none.
	Draw(ctx context.Context, id string) (rec DrawRecord, ok bool, err error)

	// CloseDraw closes draw id's entries, if they are open, in one atomic step: the
	// entrants are the ordinary lane's places held then (present and away; the pass
	// lane is no part of a draw), and for a random draw every ticket it picked before;
	// Close is the last ticket issued. An event's draw sets aside the Entrants tickets
	// after it (First+1..First+Entrants), so that everyone who joins later is behind
	// the drawn order, and is then DrawClosed until PlaceDraw has placed everyone; a
	// random draw is DrawDrawn at once. It returns the record, closed however it was
	// found (a close of a closed or drawn draw changes nothing).
	CloseDraw(ctx context.Context, id string) (DrawRecord, error)

	// DrawEntrants appends to dst the tickets of closed draw id's entrants, ascending,
	// each once.
	DrawEntrants(ctx context.Context, id string, dst []uint64) ([]uint64, error)

	// PlaceDraw puts an event's drawn order into the line, a chunk at a time: when
	// the record's Done is done, it moves the place held at ticket from[i] (a waiter,
	// present or away, with everything the place holds) to ticket First+done+1+i, the
	// (done+1+i)-th place of the order, in one atomic step, and adds len(from) to
	// Done; the last place makes the draw DrawDrawn. A ticket that holds no place (its
	// waiter left) leaves its place empty. When Done is not done (another instance
	// placed that chunk), nothing moves. It returns the record as it then is.
	PlaceDraw(ctx context.Context, id string, done int, from []uint64) (DrawRecord, error)

	// Present appends to dst the tickets of the ordinary lane's present waiters,
	// ascending: what a committed random draw picks among (Limits.Picks).
	Present(ctx context.Context, dst []uint64) ([]uint64, error)

	// Admissions returns the room's admissions by reason per minute, from the minute
	// of since to the minute of now (at most AdmissionsKept), oldest first, leaving
	// out the minutes with none. Only admissions made under Limits.Reasons are
	// counted.
	Admissions(ctx context.Context, since, now time.Time) ([]Minute, error)

	// Subscribe calls fn with the ids of every admission made from the queue by anyone
	// sharing this store (this instance's steps and, for shared stores, other
	// instances'). Delivery is best effort: callers reconcile through Positions/Status.
	// The returned function ends the subscription.
	Subscribe(fn func(ids []VisitorID)) (cancel func())
}

// Limits are the settings the store needs to decide admissions. They are passed on every
// call, so a reload or a runtime change applies to the very next decision.
type Limits struct {
	// Capacity is how many visitors may be admitted at once.
	Capacity int
	// SessionTTL is how long an admitted visitor keeps the slot without a request.
	SessionTTL time.Duration
	// SessionMax, when above 0, is how long after admission a session ends however
	// active the visitor is: Step drops the visitors admitted longer ago than that.
	SessionMax time.Duration
	// QueueTTL is how long a waiter counts as present without being heard from. After
	// that the waiter is away: kept, but not counted in anyone's position nor in
	// Waiting, never admitted, never holding up the line.
	QueueTTL time.Duration
	// ArriveTTL, when above 0, is how long a waiter admitted from the queue (by Step
	// or AdmitNow) has to arrive: to be confirmed by a Touch. Step gives back the slot
	// of one who has not, and keeps the turn as an away waiter would, once: a second
	// miss loses it (see memory_arrive.go and the Redis store's step). A visitor
	// admitted at join has arrived.
	ArriveTTL time.Duration
	// AwayTTL is how long, from when last heard from, a waiter keeps the place. A
	// waiter heard from again before then is back at the same ticket: ahead of
	// everyone behind it, so a waiter whose turn came while away goes in first. At or
	// below QueueTTL (0, say) the place is lost at QueueTTL and nobody is ever away.
	// Only a waiter heard from since joining (Status, Heartbeat, a Holder's Hold) or
	// joined with a pass is kept away: one never heard from after its join's answer (a
	// cookie-less flood, a bot that would replay its cookies later) loses the place at
	// QueueTTL, so a flood cannot be held for AwayTTL and then put back ahead of the
	// real waiters.
	AwayTTL time.Duration
	// Rate, when above 0, is the most admissions (at join and from the queue) in any
	// window of RatePer, room-wide. It is a sliding window: the store remembers the
	// times of the recent admissions, at most Rate of them.
	Rate    int
	RatePer time.Duration
	// Random makes Step pick each admitted waiter uniformly among the live waiters
	// instead of from the head.
	Random bool
	// Hold admits nobody new: Join always queues and Step only drops the expired
	// (queue_all mode, and the pre-queue before a scheduled event).
	Hold bool
	// NoQueue makes Join turn away (State Rejected) a visitor it cannot admit at once
	// instead of queueing them (reject mode).
	NoQueue bool
	// Picks, with Random, are a committed random draw's picks (nil: Random picks
	// uniformly).
	Picks *Picks
	// Reasons says every live instance of the room reads the counts of admissions by
	// reason (Store.Fleet reads FormatLevel 2 or more): the store counts each
	// admission under its reason, a minute at a time (Admissions). Without it nothing
	// is counted.
	Reasons bool
}

// Picks are a committed random draw's picks, as the room ranks the present waiters by
// the draw's rule: Step admits the first of Tickets that are present waiters of the
// ordinary lane, in this order, and no other waiter of that lane (the pass lane goes
// first, as ever), and only while draw Draw is open; it records each as an entrant of
// the draw (CloseDraw). A pointer, so that Limits stay comparable.
type Picks struct {
	Draw    string
	Tickets []uint64
}

// Keep is how long a waiter keeps the place without being heard from.
func (l Limits) Keep() time.Duration { return max(l.AwayTTL, l.QueueTTL) }

// rateBudget is how many more admissions the rate allows, given how many admissions
// are still inside the window, or -1 when there is no rate limit.
func (l Limits) rateBudget(recent int) int {
	if l.Rate <= 0 || l.RatePer <= 0 {
		return -1
	}
	return max(l.Rate-recent, 0)
}

// StepResult is what an admission step did.
type StepResult struct {
	// Admitted are the waiters let in, in ticket order.
	Admitted []VisitorID
	// Abandoned counts the waiters whose places were dropped for not being heard from
	// in time (AwayTTL, or QueueTTL when nobody is kept away).
	Abandoned int
	// NoShows counts the admitted visitors who did not arrive within ArriveTTL and
	// gave their slots back.
	NoShows int
	// ByReason counts the admissions by their reason: ReasonAdmin for AdmitNow's,
	// else each as Step made it. It is counted whether or not Limits.Reasons is.
	ByReason ByReason
}

// State is where a visitor stands in a room.
type State uint8

const (
	// Unknown means the store does not know the visitor: never seen, expired, left,
	// revoked or removed. The visitor is treated as new.
	Unknown State = iota
	// Queued means the visitor holds a ticket in the queue.
	Queued
	// Admitted means the visitor holds a slot in the active set.
	Admitted
	// Rejected is Join's answer under Limits.NoQueue to a visitor it could not admit:
	// the store keeps nothing about them.
	Rejected
	// Moved is Status's answer for a visitor whose place was given to another
	// device (Move): it holds nothing, and is not a new visitor's to join either
	// (see internal/room/handoff.go).
	Moved
)

func (s State) String() string {
	switch s {
	case Queued:
		return "queued"
	case Admitted:
		return "admitted"
	case Rejected:
		return "rejected"
	case Moved:
		return "moved"
	default:
		return "unknown"
	}
}

// Status is a visitor's standing as the store saw it.
type Status struct {
	State State
	// Ticket is the waiter's ticket (Queued only). Tickets grow with arrival order.
	Ticket uint64
	// Since is when the session began, its admission (Admitted only), to the
	// millisecond: what session_max counts from, kept by Move. The zero time when the
	// store cannot say. It tells a key's other devices when the key's session began
	// (internal/room/key.go).
	Since time.Time
	// Position is present waiters ahead + 1 (Queued only).
	Position int
	// Returned says the waiter was away and this call brought them back (Queued only).
	Returned bool
	// Missed says, with Returned, that the waiter's turn had come while away: it was
	// admitted, did not arrive within ArriveTTL, and goes in first; missing that turn
	// too loses the place (Queued only).
	Missed bool
	// Active and Waiting are the room's counters as this call saw them (Join and
	// Status), so an answer shows the room the visitor's own decision was made in.
	Active, Waiting int
	// Known says, from Join or JoinPass, that the id was known already: nothing was
	// joined or counted, and the answer is where the visitor stands (a keyed visitor
	// on another device).
	Known bool
}

// Stats are a room's counters at one moment.
type Stats struct {
	// Active is the number of admitted visitors holding a slot.
	Active int
	// Waiting is the number of present waiters (queued and heard from within QueueTTL).
	Waiting int
	// Away is the number of waiters keeping their place while quiet (see Limits.AwayTTL).
	Away int
	// AdmittedTotal counts every admission ever made in this room (at join and from the
	// queue). The Estimator measures throughput from its growth.
	AdmittedTotal uint64
	// NoShows counts every visitor admitted from the queue who did not arrive within
	// Limits.ArriveTTL and gave the slot back.
	NoShows uint64
	// Handoffs counts every place moved to another device (Move).
	Handoffs uint64
}
