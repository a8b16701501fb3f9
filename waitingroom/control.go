package waitingroom

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Room is a running room as the admin API sees it: a handle on the newest handler of
// that name, reading and steering the shared store. Changes go through the store, so
// every instance sharing it applies them within one admission tick.
type Room struct {
	h *Handler
}

// Name is the room's name.
func (r *Room) Name() string { return r.h.Name }

// Overrides are the runtime changes made through the admin API. They are kept in the
// room's store and win over the configuration until cleared.
type Overrides struct {
	// Capacity replaces the configured capacity.
	Capacity *int `json:"capacity,omitempty"`
	// Rate replaces the configured rate limit; a Count of 0 turns the limit off.
	Rate *Rate `json:"rate,omitempty"`
	// Mode replaces the configured mode (and wins over an event's pre-queue).
	Mode *string `json:"mode,omitempty"`
}

// Settings are the values a room is configured with.
type Settings struct {
	Capacity   int    `json:"capacity"`
	Rate       *Rate  `json:"rate"`
	Mode       string `json:"mode"`
	SessionTTL string `json:"session_ttl"`
	QueueTTL   string `json:"queue_ttl"`
}

// EventInfo is the scheduled event in progress or in its pre-queue.
type EventInfo struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Phase is "prequeue" (before the start: everyone queues) or "running".
	Phase string `json:"phase"`
	// StartsInSeconds counts down to the start during the pre-queue.
	StartsInSeconds *int `json:"starts_in_seconds,omitempty"`
	Shuffle         bool `json:"shuffle"`
}

// RoomInfo is what the admin API reports about a room.
type RoomInfo struct {
	Name string `json:"name"`
	// Mode, Capacity and Rate are the effective values: configuration, then the event in
	// progress, then the admin overrides. Mode is "prequeue" during an event's pre-queue.
	Mode     string `json:"mode"`
	Capacity int    `json:"capacity"`
	// Rate is the admission rate limit; null when admissions are bound by capacity only.
	Rate          *Rate  `json:"rate"`
	Active        int    `json:"active"`
	Waiting       int    `json:"waiting"`
	AdmittedTotal uint64 `json:"admitted_total"`
	// ETASeconds is the estimated wait of someone arriving now (null: no data yet).
	ETASeconds *int `json:"eta_seconds"`
	// AdmissionsPerMinute is the measured throughput over the last minutes (null: no
	// data yet).
	AdmissionsPerMinute *float64   `json:"admissions_per_minute"`
	Store               string     `json:"store"`
	Configured          Settings   `json:"configured"`
	Overrides           Overrides  `json:"overrides"`
	Event               *EventInfo `json:"event"`
}

// Info reads the room's state from the store (fresh, not the tick's cached copy).
func (r *Room) Info(ctx context.Context) (RoomInfo, error) {
	st, err := r.h.store.Stats(ctx)
	if err != nil {
		return RoomInfo{}, fmt.Errorf("reading room counters: %w", err)
	}
	o, err := r.overrides(ctx)
	if err != nil {
		return RoomInfo{}, err
	}
	r.h.room.overrides.Store(&o) // what this call reads is what it reports
	now := r.h.clock.Now()
	p := r.h.policyAt(now)
	configuredMode := r.h.Mode
	if configuredMode == "" {
		configuredMode = ModeFIFO
	}
	info := RoomInfo{
		Name:          r.h.Name,
		Mode:          p.mode,
		Capacity:      p.capacity,
		Active:        st.Active,
		Waiting:       st.Waiting,
		AdmittedTotal: st.AdmittedTotal,
		Store:         r.h.storeType,
		Configured: Settings{
			Capacity:   r.h.Capacity,
			Rate:       r.h.Rate,
			Mode:       configuredMode,
			SessionTTL: time.Duration(r.h.SessionTTL).String(),
			QueueTTL:   time.Duration(r.h.QueueTTL).String(),
		},
		Overrides: o,
	}
	if p.rate.limits() {
		info.Rate = p.rate
	}
	if ev := p.event; ev != nil {
		info.Event = &EventInfo{Start: ev.Start, End: ev.End, Phase: "running", Shuffle: ev.Shuffle}
		if p.prequeue {
			info.Mode, info.Event.Phase = "prequeue", "prequeue"
			s := ceilSeconds(p.startsIn)
			info.Event.StartsInSeconds = &s
		}
	}
	if rate, ok := r.h.room.est.rate(); ok {
		perMinute := rate * 60
		info.AdmissionsPerMinute = &perMinute
	}
	if rate, ok := r.h.throughput(p); ok && !p.holds() {
		eta := int(etaAt(st.Waiting+1, rate) / time.Second)
		info.ETASeconds = &eta
	}
	return info, nil
}

func (r *Room) overrides(ctx context.Context) (Overrides, error) {
	var o Overrides
	doc, err := r.h.store.Overrides(ctx)
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

// InputError is a request the caller got wrong; the admin API answers 400 with it.
type InputError struct{ msg string }

func (e *InputError) Error() string { return e.msg }

func inputErrorf(format string, args ...any) error {
	return &InputError{msg: fmt.Sprintf(format, args...)}
}

// Patch applies a JSON document of runtime changes: {"capacity": 20} sets a value,
// {"capacity": null} restores the configured one. Unknown fields and bad values are
// an *InputError, and then nothing changes.
func (r *Room) Patch(ctx context.Context, body []byte) (RoomInfo, error) {
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&fields); err != nil {
		return RoomInfo{}, inputErrorf("malformed JSON: %v", err)
	}
	// Anything after the value, even a lone ] or } (which More does not see), is a
	// malformed body.
	if _, err := dec.Token(); err != io.EOF {
		return RoomInfo{}, inputErrorf("malformed JSON: more than one value")
	}
	if fields == nil {
		return RoomInfo{}, inputErrorf("want a JSON object such as {\"capacity\": 20}")
	}
	o, err := r.overrides(ctx)
	if err != nil {
		return RoomInfo{}, err
	}
	for name, raw := range fields {
		switch name {
		case "capacity":
			if string(raw) == "null" {
				o.Capacity = nil
				continue
			}
			var n int
			if err := json.Unmarshal(raw, &n); err != nil {
				return RoomInfo{}, inputErrorf("capacity must be a whole number or null, got %s", raw)
			}
			if n <= 0 {
				return RoomInfo{}, inputErrorf("capacity must be greater than 0, got %d", n)
			}
			o.Capacity = &n
		case "rate":
			rate, err := patchRate(raw)
			if err != nil {
				return RoomInfo{}, err
			}
			o.Rate = rate
		case "mode":
			if string(raw) == "null" {
				o.Mode = nil
				continue
			}
			var m string
			if err := json.Unmarshal(raw, &m); err != nil {
				return RoomInfo{}, inputErrorf("mode must be a string or null, got %s", raw)
			}
			if err := checkMode(m); err != nil {
				return RoomInfo{}, inputErrorf("%v", err)
			}
			o.Mode = &m
		default:
			return RoomInfo{}, inputErrorf("unknown field %q (the fields are: capacity, rate, mode)", name)
		}
	}
	var doc []byte
	if o != (Overrides{}) {
		doc, _ = json.Marshal(o)
	}
	if err := r.h.store.SetOverrides(ctx, doc); err != nil {
		return RoomInfo{}, fmt.Errorf("saving runtime settings: %w", err)
	}
	r.forEachHandler(func(h *Handler) { h.room.overrides.Store(&o) })
	r.applyNow(ctx)
	return r.Info(ctx)
}

// patchRate reads a PATCH's rate: null restores the configured rate, "off" lifts the
// limit, {"count": n, "per": "1m"} sets one.
func patchRate(raw json.RawMessage) (*Rate, error) {
	switch string(raw) {
	case "null":
		return nil, nil
	case `"off"`:
		return &Rate{}, nil
	}
	var rate Rate
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rate); err != nil {
		return nil, inputErrorf(`rate must be {"count": n, "per": "1m"}, "off" or null, got %s`, raw)
	}
	if err := rate.validate(); err != nil {
		return nil, inputErrorf("%v", err)
	}
	return &rate, nil
}

// Admit lets the next n waiters in at once, beyond capacity, rate and mode if need be,
// and reports how many were admitted. They count against the rate window, so regular
// admissions slow down to keep the rate over the window.
func (r *Room) Admit(ctx context.Context, n int) (int, error) {
	if n <= 0 {
		return 0, inputErrorf("count must be greater than 0, got %d", n)
	}
	rm := r.h.room
	now := r.h.clock.Now()
	res, err := r.h.store.AdmitNow(ctx, n, now, r.h.limitsFor(r.h.policyAt(now)))
	if err != nil {
		return 0, fmt.Errorf("admitting waiters: %w", err)
	}
	rm.metrics.admitted.Add(float64(len(res.Admitted)))
	rm.metrics.abandoned.Add(float64(res.Abandoned))
	return len(res.Admitted), nil
}

// ErrNoVisitor is returned when removing a visitor the room does not hold.
var ErrNoVisitor = errors.New("no such visitor in this room")

// RemoveVisitor takes one visitor (queued or admitted) out of the room. An admitted
// visitor's other instances learn it at their next throttled touch (seconds).
func (r *Room) RemoveVisitor(ctx context.Context, id VisitorID) error {
	ok, err := r.h.store.Leave(ctx, id)
	if err != nil {
		return fmt.Errorf("removing visitor: %w", err)
	}
	if !ok {
		return ErrNoVisitor
	}
	r.forEachHandler(func(h *Handler) { h.room.forgetTouched(id) })
	r.applyNow(ctx)
	return nil
}

// Reset empties the queue and the active set.
func (r *Room) Reset(ctx context.Context) error {
	if err := r.h.store.Reset(ctx); err != nil {
		return fmt.Errorf("resetting room: %w", err)
	}
	r.forEachHandler(func(h *Handler) { h.room.touched.clear() })
	r.applyNow(ctx)
	return nil
}

// applyNow runs an admission step at once, so a change shows in the answer to the
// call that made it (a raised capacity has admitted waiters by then). Other handlers of
// the room in this process are kicked; other instances follow within a tick.
func (r *Room) applyNow(ctx context.Context) {
	r.h.room.tick(ctx)
	r.forEachHandler(func(h *Handler) {
		if h != r.h {
			h.room.kick()
		}
	})
}

func (r *Room) forEachHandler(fn func(*Handler)) {
	registry.Lock()
	hs := append([]*Handler(nil), registry.rooms[r.h.Name]...)
	registry.Unlock()
	for _, h := range hs {
		fn(h)
	}
}
