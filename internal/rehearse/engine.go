package rehearse

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
)

// This file is the rehearsal's one door into the engine: it builds the room from
// the site's configuration, as the module's Provision does, on a memory store and
// the rehearsal's clock, and turns each thing a visitor's browser does into the
// request the module would hand the room (room.Visit), and the room's decision into
// what the browser learns. Nothing else in the package names internal/room or
// internal/queue.

// visitorID is a visitor's id as the store keeps it.
type visitorID = queue.VisitorID

// step is the admission step's period: the room loop's ticker.
const step = int64(room.StepEvery)

// touchEvery is how often an instance confirms an admitted visitor's session with
// the store: within it, a request is a cookie check only.
const touchEvery = queue.TouchEvery

// Variant is one set of the room's settings to rehearse: the configuration the
// module maps the site's waiting_room onto (Provision's room.Config), and, if any,
// a change made through the admin API's PATCH before the first arrival (the same
// body: {"capacity": 400}), which --compare uses to try a setting against the
// configured one.
type Variant struct {
	Label  string
	Config room.Config
	Patch  []byte
}

// rehearsalSecret signs the rehearsal's cookies when the configuration has none:
// a room without one agrees on a random one through the store, on the wall clock.
var rehearsalSecret = [][]byte{[]byte("the rehearsal's own signing secret, 32 bytes or more")}

// simZero is the simulated instant of the sale's start. The memory store's
// once-only check (adapt's claim of each control period) reads the wall clock and
// refuses an instant it has passed, so the sale is played far in the future; the
// configuration's events move with it. It is on the hour, so minutes and control
// periods fall where they would.
var simZero = time.Unix(3_999_999_600, 0)

// simClock is the room's clock: the rehearsal sets it before every call.
type simClock struct{ now time.Time }

func (c *simClock) Now() time.Time { return c.now }

// place is where a decision leaves a visitor.
type place uint8

const (
	placeIn      place = iota + 1 // let through to the shop
	placeWaiting                  // in line
	placeAway                     // turned away (reject, invite_only), or the room could not say
	placeThrough                  // the room is suspended: through, with no slot
)

// answer is what a browser learns from one request.
type answer struct {
	place place
	id    visitorID
	// cookie is the room cookie the answer sets, nil for none (keep the one held).
	cookie []byte
	// eta is the wait the page shows, in seconds: etaUnknown while the room has no
	// evidence (or holds everyone), etaNone on an answer that shows none; position
	// the place it shows.
	eta, position int32
}

const (
	etaNone    int32 = -2
	etaUnknown int32 = -1
)

// engine is one room of the real engine on a memory store.
type engine struct {
	ctx   context.Context
	rm    *room.Room
	store *queue.MemoryStore
	clock *simClock
	d     room.Decision
	// shop is what the room measured of the shop since the last shopP90, and
	// shopAll all it measured.
	shop, shopAll queue.Sample
	metrics       engineMetrics
	// sessionTTL and sessionMax are the room's as configured: how often a shopper
	// must make a request, and whether sessions end however active.
	sessionTTL time.Duration
	queueTTL   time.Duration
	sessionMax bool
	adapt      bool
}

// ticks is what the engine tells the rehearsal at each admission step.
type ticks interface {
	// stepped gives the counters the step read and the capacity in force.
	stepped(active, waiting, away int, admittedTotal uint64, capacity int)
	// target is adapt's p90 target in force, 0 while off.
	target(d time.Duration)
}

// newEngine starts v's room at the simulated start, its events moved so that the
// configuration's saleStart falls there (zero: leave them). admitted hears of every
// admission from the line, as the waiting sockets' hub does. The room's draws take
// their seeds from seed, so that a lottery or mode random replays as the people do.
func newEngine(v Variant, saleStart time.Time, seed uint64, t ticks, admitted func([]visitorID)) (*engine, error) {
	cfg := v.Config
	if err := settings.CheckRuntime(cfg.Runtime); err != nil {
		return nil, fmt.Errorf("the room's settings: %w", err)
	}
	if cfg.Name == "" {
		cfg.Name = "rehearsal"
	}
	if cfg.Secrets == nil {
		cfg.Secrets = rehearsalSecret
	}
	// A rehearsal's visitors are people, each on a browser of its own: no cap on one
	// address binds, and a proof of work delays a join by the browser's solving time,
	// which is not what is rehearsed.
	cfg.PerIP, cfg.ProofOfWork = room.PerIP{}, 0
	cfg.Events = append([]settings.Event(nil), cfg.Events...)
	if !saleStart.IsZero() {
		shift := simZero.Sub(saleStart)
		for i := range cfg.Events {
			cfg.Events[i].Start = cfg.Events[i].Start.Add(shift)
			cfg.Events[i].End = cfg.Events[i].End.Add(shift)
		}
	}
	e := &engine{ctx: context.Background(), store: queue.NewMemoryStore(), clock: &simClock{now: simZero},
		sessionTTL: cfg.SessionTTL, queueTTL: cfg.QueueTTL, sessionMax: cfg.SessionMax > 0, adapt: cfg.Adapt != nil}
	e.metrics = engineMetrics{e: e, ticks: t}
	cfg.Store, cfg.StoreType, cfg.Clock, cfg.Metrics = e.store, "memory", e.clock, e.metrics
	cfg.Logger, cfg.History, cfg.Siblings = nil, nil, nil
	var draws [32]byte
	binary.LittleEndian.PutUint64(draws[:], seed)
	copy(draws[8:], "rehearsal draws")
	cfg.Random = rand.NewChaCha8(draws)
	e.rm = room.New(&cfg)
	e.store.Subscribe(admitted)
	e.rm.Tick(e.ctx) // as Start does, before the first request
	if v.Patch != nil {
		if _, err := e.rm.Patch(e.ctx, v.Patch); err != nil {
			return nil, fmt.Errorf("the settings compared, %s: %w", v.Patch, err)
		}
		s := e.rm.Settings(simZero)
		e.sessionTTL, e.queueTTL, e.sessionMax, e.adapt = s.SessionTTL, s.QueueTTL, s.SessionMax > 0, s.Adapt != nil
	}
	return e, nil
}

// firstOpening is when the earliest of cfg's events opens its queue (its pre-queue,
// or its start); zero without events.
func firstOpening(cfg *room.Config) time.Time {
	var first time.Time
	for _, ev := range cfg.Events {
		if at := ev.Start.Add(-ev.Prequeue); first.IsZero() || at.Before(first) {
			first = at
		}
	}
	return first
}

// at sets the room's clock.
func (e *engine) at(now time.Time) { e.clock.now = now }

// heartbeatEvery is how often the room's hub hears of a connected waiter.
func (e *engine) heartbeatEvery() time.Duration { return e.rm.HeartbeatEvery() }

// arrive is a new visitor's first page load.
func (e *engine) arrive() answer { return e.decide(room.Visit{Page: true}) }

// socket is the waiting page opening its WebSocket with cookie.
func (e *engine) socket(cookie string) answer {
	return e.decide(room.Visit{Socket: true, Cookie: cookie})
}

// page is a page load (the navigation after the turn, a shopper's click).
func (e *engine) page(cookie string) answer { return e.decide(room.Visit{Page: true, Cookie: cookie}) }

// poll is the waiting page's JSON poll, as a page back from sleep asks first.
func (e *engine) poll(cookie string) answer { return e.decide(room.Visit{Cookie: cookie}) }

func (e *engine) decide(v room.Visit) answer {
	v.Now = e.clock.now
	d := &e.d
	e.rm.Decide(e.ctx, &v, d)
	a := answer{id: d.Visitor, cookie: d.Cookie(), eta: etaNone}
	switch {
	case d.Outcome == room.Through:
		a.place = placeThrough
	case d.Place == queue.Admitted:
		a.place = placeIn
	case d.Place == queue.Queued:
		a.place = placeWaiting
		a.position = int32(min(d.Status.Position, 1<<30))
		if !v.Socket {
			a.eta = etaUnknown
			if s := e.rm.Tell(d, v.Now).ETASeconds; s != nil {
				a.eta = int32(min(*s, 1<<30))
			}
		}
	default:
		a.place = placeAway
	}
	return a
}

// served is the shop's answer to one of id's requests that the room let through.
func (e *engine) served(id visitorID, ttfb time.Duration, failed bool) { e.rm.Served(id, ttfb, failed) }

// revoke is the shop's `Waiting-Room-Command: revoke` on id's request.
func (e *engine) revoke(id visitorID) { e.rm.Revoke(e.ctx, id) }

// beat is the hub hearing of its connected waiters ids, in batches as it does.
func (e *engine) beat(ids []visitorID) {
	const batch = 1000 // push's heartbeatBatch, which it does not export
	for i := 0; i < len(ids); i += batch {
		_ = e.store.Heartbeat(e.ctx, ids[i:min(i+batch, len(ids))], e.clock.now)
	}
}

// tick is one admission step of the room loop.
func (e *engine) tick() { e.rm.Tick(e.ctx) }

// shopP90 is the p90 of what the room measured of the shop since the last call,
// and how many requests that is, read as the room's own charts read it.
func (e *engine) shopP90() (time.Duration, uint64) {
	p90, n := e.shop.Percentile(0.9), e.shop.Count()
	clear(e.shop.Latency)
	e.shop.Failed = 0
	return p90, n
}

// shopP90All is the p90 of all the room measured of the shop, and how many
// requests that is.
func (e *engine) shopP90All() (time.Duration, uint64) {
	return e.shopAll.Percentile(0.9), e.shopAll.Count()
}

// engineMetrics is the room's metrics sink: what the rehearsal charts of the
// room's own counting.
type engineMetrics struct {
	e     *engine
	ticks ticks
}

func (engineMetrics) Admitted(int)              {}
func (engineMetrics) Queued()                   {}
func (engineMetrics) Abandoned(int)             {}
func (engineMetrics) NoShows(int)               {}
func (engineMetrics) Handoff()                  {}
func (engineMetrics) Waited(time.Duration)      {}
func (engineMetrics) AdmittedBy(queue.ByReason) {}

func (m engineMetrics) Counters(st *queue.Stats, capacity int) {
	m.ticks.stepped(st.Active, st.Waiting, st.Away, st.AdmittedTotal, capacity)
}

func (m engineMetrics) Measured(s *queue.Sample, _ time.Duration) {
	m.e.shop.Add(*s)
	m.e.shopAll.Add(*s)
}

func (m engineMetrics) LatencyTarget(d time.Duration) { m.ticks.target(d) }
