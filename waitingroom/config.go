package waitingroom

import (
	"errors"
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
)

// Rate is an admission rate limit: at most Count admissions in any window of Per.
type Rate struct {
	// Count is the most admissions per window. 0 (only in an admin override) means no
	// rate limit.
	Count int `json:"count"`
	// Per is the window, such as "1m"; at least 1s.
	Per caddy.Duration `json:"per,omitempty"`
}

// MarshalJSON writes the window as a duration string ("1m0s"), as the room's admin API
// shows it: it reads back (caddy.Duration accepts it) and reads better than
// nanoseconds in adapted configs.
func (r Rate) MarshalJSON() ([]byte, error) { return r.engine().MarshalJSON() }

func (r *Rate) validate() error { return room.CheckRate(r.engine()) }

// engine is the rate as the room takes it.
func (r *Rate) engine() room.Rate { return room.Rate{Count: r.Count, Per: time.Duration(r.Per)} }

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
		if err := room.CheckMode(e.Mode); err != nil {
			return fmt.Errorf("event %w", err)
		}
	}
	return nil
}

// engine is the event as the room takes it.
func (e *Event) engine() room.Event {
	ev := room.Event{Start: e.Start, End: e.End, Prequeue: time.Duration(e.Prequeue), Shuffle: e.Shuffle,
		Capacity: e.Capacity, Mode: e.Mode}
	if e.Rate != nil {
		r := e.Rate.engine()
		ev.Rate = &r
	}
	return ev
}

// opens is when the event's queue opens: Start, or the pre-queue's start.
func (e *Event) opens() time.Time { return e.Start.Add(-time.Duration(e.Prequeue)) }

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
