package rehearse

import (
	"math/rand/v2"
	"time"
)

// visitor is one person of the sale, and what became of them. Times are
// nanoseconds since the sale's start.
type visitor struct {
	id     visitorID
	cookie string

	arrived  int64
	admitted int64 // when first let into the shop; -1 not yet
	ended    int64 // gave up, became a no-show, was turned away or left the shop
	leaveAt  int64 // inside: when the stay ends
	eta      int32 // what the page showed at arrival (etaNone, etaUnknown or seconds)
	position int32 // and the place it showed (0: none)

	traits
	state state
	slept bool // its phone has slept
}

// traits are what a visitor does, drawn at arrival from the seed and the visitor's
// number alone: every variant of a comparison plays the same people.
type traits struct {
	stay     int64 // how long it shops
	giveUp   int64 // the wait at which it closes the tab; -1 never
	sleepAt  int64 // the wait at which its phone sleeps; -1 never
	sleepFor int64
	noShow   bool // its turn comes while it is away from the screen for good
	checkout bool // its last request is a checkout the shop revokes
}

type state uint8

const (
	stWaiting    state = iota + 1 // in line, its page open and heard from
	stAsleep                      // in line, its phone asleep
	stInside                      // shopping
	stLeft                        // shopped and left
	stGaveUp                      // closed the tab while in line
	stNoShow                      // its turn came and it never arrived
	stTurnedAway                  // the room turned it away
)

// inLine says the visitor is in line, awake or asleep.
func (s state) inLine() bool { return s == stWaiting || s == stAsleep }

// drawTraits draws visitor n's traits for sale s. It draws the same numbers in the
// same order whatever the sale says, so a share changed between two sales changes
// who does what, not everyone's draws.
// r draws from pcg, which is seeded here.
func drawTraits(r *rand.Rand, pcg *rand.PCG, seed uint64, n int, s *Sale) traits {
	pcg.Seed(seed, uint64(n))
	t := traits{stay: int64(draw(r, s.Stay)), giveUp: -1, sleepAt: -1}
	giving := r.Float64()
	for _, g := range s.GiveUp {
		// Of those still there at each stage, the stage's share go.
		if giving < g.Share {
			t.giveUp = int64(g.After)
			break
		}
		giving = (giving - g.Share) / (1 - g.Share)
	}
	sleeps, at, length := r.Float64(), draw(r, s.Sleep.After), draw(r, s.Sleep.For)
	if sleeps < s.Sleep.Share {
		t.sleepAt, t.sleepFor = int64(at), int64(length)
	}
	t.noShow = r.Float64() < s.NoShows
	t.checkout = r.Float64() < s.Checkout
	return t
}

// draw is a duration drawn uniformly within sp.
func draw(r *rand.Rand, sp Spread) time.Duration {
	u := r.Float64()
	return sp.Base + time.Duration((2*u-1)*float64(sp.Spread))
}
