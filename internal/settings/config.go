package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Config is what a room is configured with that its settings follow from: the
// runtime settings as configured, and the scheduled events.
type Config struct {
	// Runtime are the settings the admin API can change while the room runs, as
	// configured.
	Runtime
	Events []Event
}

// Rate is an admission rate limit: at most Count admissions in any window of Per.
type Rate struct {
	Count int
	Per   time.Duration
}

// Limits reports whether the rate limits anything (a zero rate is none).
func (r Rate) Limits() bool { return r.Count > 0 && r.Per > 0 }

// PerSecond is the rate's admissions per second.
func (r Rate) PerSecond() float64 { return float64(r.Count) / r.Per.Seconds() }

// MarshalJSON writes the window as a duration string ("1m0s"), which reads back and
// reads better than nanoseconds in the admin API and the stored overrides.
func (r Rate) MarshalJSON() ([]byte, error) {
	out := struct {
		Count int    `json:"count"`
		Per   string `json:"per,omitempty"`
	}{Count: r.Count}
	if r.Per > 0 {
		out.Per = r.Per.String()
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes; the window may also be nanoseconds.
func (r *Rate) UnmarshalJSON(b []byte) error {
	var in struct {
		Count int             `json:"count"`
		Per   json.RawMessage `json:"per"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	r.Count, r.Per = in.Count, 0
	if len(in.Per) == 0 || string(in.Per) == "null" {
		return nil
	}
	var ns int64
	if json.Unmarshal(in.Per, &ns) == nil {
		r.Per = time.Duration(ns)
		return nil
	}
	var s string
	if err := json.Unmarshal(in.Per, &s); err != nil {
		return fmt.Errorf("rate window: %w", err)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("rate window: %w", err)
	}
	r.Per = d
	return nil
}

// Event is a scheduled opening (see the module's Event for what each field means).
type Event struct {
	Start, End time.Time
	Prequeue   time.Duration
	Shuffle    bool
	Capacity   int // 0: the room's
	Rate       *Rate
	Mode       string
}

// Opens is when the event's queue opens: Start, or the pre-queue's start.
func (e *Event) Opens() time.Time { return e.Start.Add(-e.Prequeue) }

// Key names the event's lottery in the store, so that it is drawn once whatever the
// number of instances (and reloads) that reach the start.
func (e *Event) Key() string { return e.Start.UTC().Format(time.RFC3339Nano) }

// CheckEvents refuses events the room cannot keep, each with its number: one without
// a start and an end, a negative pre-queue or capacity, a bad rate or mode, and two
// that overlap, pre-queues included.
func CheckEvents(events []Event) error {
	for i := range events {
		if err := events[i].check(); err != nil {
			return fmt.Errorf("event %d: %w", i+1, err)
		}
		for j := range i {
			if events[i].overlaps(&events[j]) {
				return fmt.Errorf("event %d (%s) overlaps event %d (%s): events and their pre-queues must not overlap",
					i+1, events[i].Start.Format(time.RFC3339), j+1, events[j].Start.Format(time.RFC3339))
			}
		}
	}
	return nil
}

func (e *Event) check() error {
	if e.Start.IsZero() || e.End.IsZero() {
		return errors.New("an event needs a start and an end")
	}
	if !e.End.After(e.Start) {
		return fmt.Errorf("event end %s is not after its start %s", e.End.Format(time.RFC3339), e.Start.Format(time.RFC3339))
	}
	if e.Prequeue < 0 {
		return fmt.Errorf("event prequeue must not be negative, got %v", e.Prequeue)
	}
	if e.Capacity < 0 {
		return fmt.Errorf("event capacity must not be negative, got %d", e.Capacity)
	}
	if e.Rate != nil {
		if err := CheckRate(*e.Rate); err != nil {
			return fmt.Errorf("event %w", err)
		}
	}
	if e.Mode != "" {
		if err := CheckMode(e.Mode); err != nil {
			return fmt.Errorf("event %w", err)
		}
	}
	return nil
}

func (e *Event) overlaps(o *Event) bool { return e.Opens().Before(o.End) && o.Opens().Before(e.End) }
