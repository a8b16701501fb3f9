package rehearse

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Sale is what a rehearsal plays against the room: who arrives when, and what each
// visitor does. It holds no setting of the room's: those are the site's own
// configuration (Variant).
type Sale struct {
	// Arrivals are the segments, one after the other from the sale's start, each
	// spreading its visitors evenly over its length.
	Arrivals []Segment
	// Start is the instant the first segment begins; zero: the opening of the room's
	// first event (its pre-queue, or its start), or, without events, an instant of
	// the rehearsal's own.
	Start time.Time

	// Stay is how long an admitted shopper keeps making requests before leaving.
	Stay Spread
	// GiveUp are the shares of the people still waiting who close the tab at a wait,
	// in the order of their waits.
	GiveUp []GiveUp
	// Sleep is the share of waiting phones that sleep once and come back.
	Sleep Sleep
	// NoShows is the share of visitors whose turn comes while they are away from the
	// screen for good: their page is heard from until then, and never arrives.
	NoShows float64
	// Checkout is the share of shoppers whose last request the shop answers with
	// `Waiting-Room-Command: revoke`, freeing the slot at once; the others' slots
	// free session_ttl after their last request.
	Checkout float64
	// Clicks is how often a shopper makes a page request, and how many requests
	// through the room each page brings (its assets, its API calls). They keep the
	// session alive and, with adapt, are what the shop is measured on.
	Clicks Clicks
	// Shop is the shop behind the room, for a room with adapt: how many it serves at
	// once and in what time, phase by phase.
	Shop []ShopPhase
}

// Segment is n arrivals spread evenly over a span.
type Segment struct {
	N    int
	Over time.Duration
}

// Spread is a duration drawn uniformly within Base ± Spread.
type Spread struct {
	Base, Spread time.Duration
}

// GiveUp is one stage of giving up: of the people still waiting at After, Share
// leave the line for good.
type GiveUp struct {
	Share float64
	After time.Duration
}

// Sleep is the share of waiters whose phone sleeps once, at a wait drawn from
// After, for a time drawn from For; then the page comes back (a poll, a new socket).
type Sleep struct {
	Share float64
	For   Spread
	After Spread
}

// Clicks is a shopper's pace: a page every Every, of Requests requests.
type Clicks struct {
	Every    time.Duration
	Requests int
}

// ShopPhase is the shop from From (since the sale's start) on: Servers requests at
// once, each in Service; a request beyond that waits its turn, so its time to first
// byte grows with the shoppers inside.
type ShopPhase struct {
	From    time.Duration
	Servers int
	Service time.Duration
}

// Defaults of what a sale leaves out.
var (
	// DefaultStay is a shopper's stay when the sale names none.
	DefaultStay = Spread{Base: 5 * time.Minute, Spread: 2 * time.Minute}
	// DefaultClicks is a page every 20 s of six requests (the page, its assets).
	DefaultClicks = Clicks{Every: 20 * time.Second, Requests: 6}
	// defaultSleepAfter is when a sleeper's phone sleeps, when the sale does not say:
	// within the first ten minutes of its wait.
	defaultSleepAfter = Spread{Base: 5 * time.Minute, Spread: 5 * time.Minute}
)

// MaxVisitors bounds a sale: a visitor costs a rehearsal about 750 bytes at most
// (its record, its cookie, its place in the store; BenchmarkRehearse's maximum
// resident size at a million), so ten million is about 7.5 GB a setting.
const MaxVisitors = 10_000_000

// Visitors is how many arrive in all.
func (s *Sale) Visitors() int {
	n := 0
	for _, seg := range s.Arrivals {
		n += seg.N
	}
	return n
}

// Length is how long the arrivals last.
func (s *Sale) Length() time.Duration {
	var d time.Duration
	for _, seg := range s.Arrivals {
		d += seg.Over
	}
	return d
}

// withDefaults is s with what it leaves out filled in.
func (s Sale) withDefaults() Sale {
	if s.Stay == (Spread{}) {
		s.Stay = DefaultStay
	}
	if s.Clicks == (Clicks{}) {
		s.Clicks = DefaultClicks
	}
	s.GiveUp = slices.Clone(s.GiveUp)
	slices.SortStableFunc(s.GiveUp, func(a, b GiveUp) int { return cmp.Compare(a.After, b.After) })
	if s.Sleep.Share > 0 && s.Sleep.After == (Spread{}) {
		s.Sleep.After = defaultSleepAfter
	}
	return s
}

// Check refuses a sale that cannot be played: no arrivals, too many, or a shop
// whose phases are out of order.
func (s *Sale) Check() error {
	n := s.Visitors()
	switch {
	case n == 0:
		return fmt.Errorf("the sale has no arrivals: give --arrivals, --arrivals-csv or an arrivals line")
	case n > MaxVisitors:
		return fmt.Errorf("the sale has %d visitors; a rehearsal takes at most %d", n, MaxVisitors)
	}
	for i := 1; i < len(s.Shop); i++ {
		if s.Shop[i].From <= s.Shop[i-1].From {
			return fmt.Errorf("the shop's phases must start in order: %v after %v", s.Shop[i].From, s.Shop[i-1].From)
		}
	}
	if len(s.Shop) > 0 && s.Shop[0].From != 0 {
		return fmt.Errorf("the shop's first phase must start at the sale's start, not %v: give the shop before the sale first", s.Shop[0].From)
	}
	return nil
}

// shopAt is the shop's phase in force at t since the sale's start.
func (s *Sale) shopAt(t time.Duration) ShopPhase {
	ph := s.Shop[0]
	for _, p := range s.Shop[1:] {
		if t < p.From {
			break
		}
		ph = p
	}
	return ph
}
