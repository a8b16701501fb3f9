package room

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/capacity"
)

// Overrides are the runtime changes made through the admin API. They are kept in the
// room's store, so every instance sharing it reads them within a tick, and they win
// over the configuration until cleared. Each field is one runtime setting
// (settings.go); nil keeps the configured value.
type Overrides struct {
	Capacity    *int    `json:"capacity,omitempty"`
	Rate        *Rate   `json:"rate,omitempty"` // a Count of 0 turns the limit off
	Mode        *string `json:"mode,omitempty"` // wins over an event's pre-queue too
	Message     *string `json:"message,omitempty"`
	SessionTTL  *Period `json:"session_ttl,omitempty"`
	QueueTTL    *Period `json:"queue_ttl,omitempty"`
	AwayTTL     *Period `json:"away_ttl,omitempty"`
	SessionMax  *Period `json:"session_max,omitempty"` // 0 turns it off
	ArriveTTL   *Period `json:"arrive_ttl,omitempty"`  // 0 turns it off
	ProofOfWork *int    `json:"proof_of_work,omitempty"`
	// Adapt changes the adaptive capacity's targets, or turns it off.
	Adapt *AdaptOverride `json:"adapt,omitempty"`

	// Adapted is not a setting but the adaptive capacity's last decision
	// (steering.go), kept here so that every instance applies and shows the same.
	Adapted *capacity.Decision `json:"adapted,omitempty"`
}

// settings are the overrides without the controller's decision: what the admin API
// shows as the operator's changes.
func (o Overrides) settings() Overrides {
	o.Adapted = nil
	return o
}

// Period is a duration in the overrides and the admin API, written as Go prints it
// ("5m0s").
type Period time.Duration

// MarshalJSON writes the period as Go prints a duration.
func (p Period) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(p).String()) }

// UnmarshalJSON reads what MarshalJSON writes.
func (p *Period) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*p = Period(d)
	return nil
}

// readOverrides reads the runtime settings document from the store.
func (rm *Room) readOverrides(ctx context.Context) (Overrides, error) {
	var o Overrides
	doc, err := rm.cfg.Store.Overrides(ctx)
	if err != nil {
		return o, fmt.Errorf("reading runtime settings: %w", err)
	}
	if len(doc) > 0 {
		if err := json.Unmarshal(doc, &o); err != nil {
			return o, fmt.Errorf("reading runtime settings: %w", err)
		}
	}
	return o, nil
}

// loadOverrides reads the overrides and settles the room's settings on them. A
// document this version cannot read is logged and ignored, never applied halfway.
func (rm *Room) loadOverrides(ctx context.Context) error {
	doc, err := rm.cfg.Store.Overrides(ctx)
	if err != nil {
		return err
	}
	var o Overrides
	if len(doc) > 0 {
		if err := json.Unmarshal(doc, &o); err != nil {
			rm.cfg.Logger.Error("ignoring unreadable runtime settings", zap.String("room", rm.cfg.Name), zap.Error(err))
			o = Overrides{}
		}
	}
	rm.settle(o)
	return nil
}

// saveAttempts bounds how often a PATCH merges again because another one was saved
// first. Each refusal means another change landed, so only a storm of changes
// exhausts it, and then this one changes nothing and says so.
const saveAttempts = 100

// saveOverrides merges a PATCH into the runtime settings in the store and returns
// what it saved: the fields named take their values in patch (nil restores the
// configured value), the others keep what the store holds. Through changeOverrides,
// a PATCH saved meanwhile by another operator, on this instance or any other sharing
// the store, is merged with, never overwritten. Timings that contradict each other
// once merged are refused (checkTimings) and then nothing changes.
func (rm *Room) saveOverrides(ctx context.Context, fields map[string]json.RawMessage, patch Overrides) (Overrides, error) {
	// The fields patch sets, as JSON; a named field missing here is restored.
	var set map[string]json.RawMessage
	b, _ := json.Marshal(patch)
	_ = json.Unmarshal(b, &set)
	saved, _, err := rm.changeOverrides(ctx, func(was Overrides, doc map[string]json.RawMessage) (bool, error) {
		for name := range fields {
			if v, ok := set[name]; ok {
				doc[name] = v
			} else {
				delete(doc, name)
			}
		}
		rm.adaptMerge(fields, &patch, was, doc)
		return true, nil
	})
	return saved, err
}

// changeOverrides reads the runtime settings document, lets change edit it (its
// fields as JSON, beside what they were), and writes it back: a compare-and-swap on
// what was read (queue.Store.SwapOverrides), so when another writer saved first it
// reads and changes again, and concurrent changes of different fields all survive.
// change returns false to write nothing. changeOverrides returns what the document
// holds after it, and whether it wrote.
func (rm *Room) changeOverrides(ctx context.Context, change func(was Overrides, doc map[string]json.RawMessage) (bool, error)) (Overrides, bool, error) {
	for range saveAttempts {
		old, err := rm.cfg.Store.Overrides(ctx)
		if err != nil {
			return Overrides{}, false, fmt.Errorf("reading runtime settings: %w", err)
		}
		doc := map[string]json.RawMessage{}
		var was Overrides
		if len(old) > 0 {
			if err := errors.Join(json.Unmarshal(old, &doc), json.Unmarshal(old, &was)); err != nil {
				return Overrides{}, false, fmt.Errorf("reading runtime settings: %w", err)
			}
		}
		write, err := change(was, doc)
		if err != nil || !write {
			return was, false, err
		}
		var o Overrides
		b, _ := json.Marshal(doc)
		if err := json.Unmarshal(b, &o); err != nil {
			return Overrides{}, false, fmt.Errorf("reading runtime settings: %w", err)
		}
		if err := rm.checkTimings(&o); err != nil {
			return Overrides{}, false, err
		}
		var saved []byte
		if o != (Overrides{}) {
			saved, _ = json.Marshal(o)
		}
		swapped, err := rm.cfg.Store.SwapOverrides(ctx, old, saved)
		if err != nil {
			return Overrides{}, false, fmt.Errorf("saving runtime settings: %w", err)
		}
		if swapped {
			return o, true, nil
		}
	}
	return Overrides{}, false, fmt.Errorf("saving runtime settings: other changes were saved %d times while this one was merged; nothing changed, try again", saveAttempts)
}
