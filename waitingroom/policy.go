package waitingroom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// Rate is an admission rate limit: at most Count admissions in any window of Per.
type Rate struct {
	// Count is the most admissions per window. 0 (only in an admin override) means no
	// rate limit.
	Count int `json:"count"`
	// Per is the window, such as "1m"; at least 1s.
	Per caddy.Duration `json:"per,omitempty"`
}

// MarshalJSON writes the window as a duration string ("1m0s"), which reads back
// (caddy.Duration accepts it) and reads better than nanoseconds in adapted configs and
// the admin API.
func (r Rate) MarshalJSON() ([]byte, error) {
	out := struct {
		Count int    `json:"count"`
		Per   string `json:"per,omitempty"`
	}{Count: r.Count}
	if r.Per > 0 {
		out.Per = time.Duration(r.Per).String()
	}
	return json.Marshal(out)
}

func (r *Rate) limits() bool { return r != nil && r.Count > 0 && r.Per > 0 }

// perSecond is the rate's admissions per second.
func (r *Rate) perSecond() float64 { return float64(r.Count) / time.Duration(r.Per).Seconds() }

func (r *Rate) validate() error {
	if r.Count <= 0 {
		return fmt.Errorf("rate count must be greater than 0, got %d", r.Count)
	}
	if r.Per <= 0 {
		return fmt.Errorf("rate window must be a positive duration, got %v", time.Duration(r.Per))
	}
	return atLeast("rate window", time.Duration(r.Per), minWindow)
}

// Event is a scheduled opening (a sale, a ticket release). From Start-Prequeue until
// Start everyone arriving is queued and told how long until the start; from Start until
// End the event's settings apply; after End the room runs as configured again.
type Event struct {
	// Start and End bound the event (RFC 3339 in JSON and the Caddyfile).
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Prequeue opens the queue this long before Start. Nobody is admitted before Start.
	Prequeue caddy.Duration `json:"prequeue,omitempty"`
	// Shuffle draws lots at Start: the waiters queued then are put in a uniformly
	// random order, so arriving early in the pre-queue gives no advantage. Later
	// arrivals queue first come, first served behind them.
	Shuffle bool `json:"shuffle,omitempty"`
	// Capacity, Rate and Mode replace the room's during the event (from Start to End).
	Capacity int    `json:"capacity,omitempty"`
	Rate     *Rate  `json:"rate,omitempty"`
	Mode     string `json:"mode,omitempty"`
}

// opens is when the event's queue opens: Start, or the pre-queue's start.
func (e *Event) opens() time.Time { return e.Start.Add(-time.Duration(e.Prequeue)) }

// key names the event's lottery in the store, so that it is drawn once whatever the
// number of instances (and reloads) that reach the start.
func (e *Event) key() string { return e.Start.UTC().Format(time.RFC3339Nano) }

func (e *Event) validate() error {
	if e.Start.IsZero() || e.End.IsZero() {
		return errors.New("an event needs a start and an end")
	}
	if !e.End.After(e.Start) {
		return fmt.Errorf("event end %s is not after its start %s", e.End.Format(time.RFC3339), e.Start.Format(time.RFC3339))
	}
	if e.Prequeue < 0 {
		return fmt.Errorf("event prequeue must not be negative, got %v", time.Duration(e.Prequeue))
	}
	if e.Capacity < 0 {
		return fmt.Errorf("event capacity must not be negative, got %d", e.Capacity)
	}
	if e.Rate != nil {
		if err := e.Rate.validate(); err != nil {
			return fmt.Errorf("event %w", err)
		}
	}
	if e.Mode != "" {
		if err := queue.CheckMode(e.Mode); err != nil {
			return fmt.Errorf("event %w", err)
		}
	}
	return nil
}

// checkEvents validates each event and that none overlaps another, pre-queue included.
func checkEvents(events []Event) error {
	for i := range events {
		if err := events[i].validate(); err != nil {
			return fmt.Errorf("event %d: %w", i+1, err)
		}
		for j := range i {
			if overlap(&events[i], &events[j]) {
				return fmt.Errorf("event %d (%s) overlaps event %d (%s): events and their pre-queues must not overlap",
					i+1, events[i].Start.Format(time.RFC3339), j+1, events[j].Start.Format(time.RFC3339))
			}
		}
	}
	return nil
}

func overlap(a, b *Event) bool { return a.opens().Before(b.End) && b.opens().Before(a.End) }

// policy is what a room runs with at one moment: the configuration, then the event in
// progress (or in its pre-queue), then the admin API's overrides, each winning over the
// one before.
type policy struct {
	capacity int
	rate     *Rate // nil or Count 0: no rate limit
	mode     string
	event    *Event // the event in progress or in its pre-queue
	prequeue bool   // before event.Start: everyone queues
	startsIn time.Duration
	// sessionMax ends a session this long after admission (0: off); here, so the
	// admitted hot path reads it with the overrides it loads anyway.
	sessionMax time.Duration
}

func (h *Handler) policyAt(now time.Time) policy {
	p := policy{capacity: h.Capacity, rate: h.Rate, mode: h.Mode, sessionMax: time.Duration(h.SessionMax)}
	if p.mode == "" {
		p.mode = queue.ModeFIFO
	}
	for i := range h.Events {
		ev := &h.Events[i]
		if now.Before(ev.opens()) || !now.Before(ev.End) {
			continue
		}
		p.event = ev
		if now.Before(ev.Start) {
			p.prequeue, p.startsIn = true, ev.Start.Sub(now)
			break
		}
		if ev.Capacity > 0 {
			p.capacity = ev.Capacity
		}
		if ev.Rate != nil {
			p.rate = ev.Rate
		}
		if ev.Mode != "" {
			p.mode = ev.Mode
		}
		break
	}
	if h.room != nil {
		o := h.room.overrides.Load()
		if o.Capacity != nil {
			p.capacity = *o.Capacity
		}
		if o.Rate != nil {
			p.rate = o.Rate
		}
		if o.SessionMax != nil {
			p.sessionMax = time.Duration(*o.SessionMax)
		}
		if o.Mode != nil {
			// The operator's lever wins over a pre-queue too (say, suspending the room).
			p.mode, p.prequeue = *o.Mode, false
		}
	}
	return p
}

// holds reports whether nobody new is admitted (queue_all, or an event's pre-queue): the
// ETA is then unknowable.
func (p policy) holds() bool { return p.prequeue || p.mode == queue.ModeQueueAll }

// limits are the store-facing settings for this policy.
func (h *Handler) limitsFor(p policy) queue.Limits {
	ss := h.sessions()
	lim := queue.Limits{
		Capacity:   p.capacity,
		SessionTTL: ss.sessionTTL,
		QueueTTL:   ss.queueTTL,
		AwayTTL:    ss.awayTTL,
		SessionMax: p.sessionMax,
	}
	if p.rate.limits() {
		lim.Rate, lim.RatePer = p.rate.Count, time.Duration(p.rate.Per)
	}
	switch {
	case p.holds(), p.mode == queue.ModeSuspended:
		// Suspended: the loop still drops the expired, so the counts stay honest.
		lim.Hold = true
	case p.mode == queue.ModeRandom:
		lim.Random = true
	case p.mode == queue.ModePassthrough:
		lim.Capacity, lim.Rate, lim.RatePer = math.MaxInt32, 0, 0
	case p.mode == queue.ModeReject:
		lim.NoQueue = true
	}
	return lim
}

// drawLots runs the lottery of an event that has started, once per event: the first
// instance to get here shuffles the queue in the store, the others (and later calls
// here) find it drawn. It is called before any join or admission step at or after the
// start, so every later arrival queues behind the drawn waiters.
func (rm *room) drawLots(ctx context.Context, p policy) {
	if p.event == nil || p.prequeue || !p.event.Shuffle {
		return
	}
	key := p.event.key()
	if _, done := rm.drawn.Load(key); done {
		return
	}
	shuffled, err := rm.store.Shuffle(ctx, key)
	if err != nil {
		rm.storeError("drawing lots", err)
		return
	}
	rm.drawn.Store(key, true)
	if shuffled {
		rm.logger.Info("event started: queue shuffled", zap.String("room", rm.h.Name), zap.String("event", key))
	}
}

// awayTTL is how long a quiet waiter keeps the place (0: lost at queue_ttl).
func (h *Handler) awayTTL() time.Duration { return h.sessions().awayTTL }
