package saletest

import (
	"fmt"
	"sync"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
)

// step is how far the clock moves between two admission steps: the room's own
// ticker period, so every instance steps as often as a running one would.
const step = 250 * time.Millisecond

// saleStart is the simulated sale's first instant. It is far in the future because
// the stores' once-only check (hand-off codes, adapt's claims) reads the store's own
// clock and refuses a key whose expiry it has passed.
var saleStart = time.Unix(4_000_000_000, 0)

// Clock is the fleet's one simulated clock.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// Now is the simulated time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *Clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// instance is one room of the fleet: one Caddy's, on its own store client.
type instance struct {
	room  *room.Room
	store queue.Store
}

// newFleet makes one room per store, all of cfg's settings, on the shared clock. The
// rooms are not started: the sale runs their admission steps itself (Room.Tick), as
// the ticker would, so that nothing runs on the wall clock.
func newFleet(stores []queue.Store, cfg room.Config, clock *Clock) []instance {
	fleet := make([]instance, len(stores))
	for i, st := range stores {
		c := cfg
		c.Name = "sale"
		c.Store, c.Clock, c.Metrics = st, clock, noMetrics{}
		fleet[i] = instance{room: room.New(&c), store: st}
	}
	return fleet
}

// visit sends one request to a random instance and returns what it got, with the
// instance's number; every request passes the invariants' watch.
func (s *sale) visit(who string, v room.Visit) (room.Decision, int) {
	i := s.rng.IntN(len(s.fleet))
	return s.visitOn(i, who, v), i
}

func (s *sale) visitOn(i int, who string, v room.Visit) room.Decision {
	v.Now = s.clock.Now()
	var d room.Decision
	s.fleet[i].room.Decide(s.ctx, &v, &d)
	s.trace.add(s.clock.Now(), "i%d %s %s → %s", i, who, describe(&v), outcome(&d))
	s.watch.request(s, i, &v, &d)
	if s.shop != nil && d.Place == queue.Admitted && d.Outcome != room.TellAdmitted {
		s.shop.serve(s, i, who, d.Visitor)
	}
	return d
}

// tick runs every instance's admission step, in a random order.
func (s *sale) tick() {
	for _, i := range s.rng.Perm(len(s.fleet)) {
		from := s.settings(i).Capacity
		s.fleet[i].room.Tick(s.ctx)
		s.watch.event(s, fmt.Sprintf("i%d step", i))
		if s.shop != nil {
			s.watch.adapted(s, i, from)
		}
	}
}

// settings are instance i's settings now.
func (s *sale) settings(i int) *settings.Snapshot { return s.fleet[i].room.Settings(s.clock.Now()) }

// store is the fleet's store as one instance sees it.
func (s *sale) store() queue.Store { return s.fleet[0].store }

func describe(v *room.Visit) string {
	what := "poll"
	switch {
	case v.Socket:
		what = "socket"
	case v.Handoff != "":
		what = "open code"
	case v.HandoffNew:
		what = "ask code"
	case v.Page:
		what = "GET /"
	}
	if v.Key != "" {
		what += " key=" + v.Key
	}
	if v.Cookie == "" {
		what += " (no cookie)"
	}
	return what
}

func outcome(d *room.Decision) string {
	names := [...]string{"through", "admitted", "queued", "challenged", "rejected", "degraded", "too many", "key too long", "moved",
		"clean redirect", "socket told", "waiting socket", "hand-off code", "hand-off busy", "cross-site refused"}
	out := names[d.Outcome]
	switch {
	case d.Place == queue.Queued:
		out += fmt.Sprintf(" #%d pos %d", d.Status.Ticket, d.Status.Position)
	}
	if d.Visitor != (queue.VisitorID{}) {
		out += " " + d.Visitor.String()[:8]
	}
	return out
}

// noMetrics counts nothing.
type noMetrics struct{}

func (noMetrics) Admitted(int)                          {}
func (noMetrics) Queued()                               {}
func (noMetrics) Abandoned(int)                         {}
func (noMetrics) Waited(time.Duration)                  {}
func (noMetrics) Counters(*queue.Stats, int)            {}
func (noMetrics) Measured(*queue.Sample, time.Duration) {}
func (noMetrics) LatencyTarget(time.Duration)           {}
func (noMetrics) NoShows(int)                           {}
func (noMetrics) Handoff()                              {}
func (noMetrics) AdmittedBy(queue.ByReason)             {}
