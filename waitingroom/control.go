package waitingroom

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// AdminRoom is a running room as the admin API sees and steers it: the one thing the
// admin module knows of this package. Every error is a caddy.APIError carrying the
// status to answer with: 400 for the caller's mistakes, 404 for what is not there,
// 503 for a store that cannot be reached. Changes go through the store, so every
// instance sharing it applies them within one admission tick.
type AdminRoom interface {
	Name() string
	// Info is the room object: settings, counters, estimate, event (see roomInfo).
	Info(ctx context.Context) (any, error)
	// Patch applies a JSON document of runtime changes and returns the room object.
	Patch(ctx context.Context, body []byte) (any, error)
	// Admit lets the next count waiters in at once and reports how many it admitted.
	Admit(ctx context.Context, count int) (int, error)
	// RemoveVisitor takes the visitor with that id (as the admin API shows ids) out.
	RemoveVisitor(ctx context.Context, id string) error
	// Reset empties the queue and the active set.
	Reset(ctx context.Context) error
	// MintPasses signs count passes of uses each, valid for ttl (pass_admin.go), and
	// returns them with their expiry.
	MintPasses(ctx context.Context, count int, ttl time.Duration, uses int) ([]string, time.Time, error)
	// History is the room's last hour on this instance (see history.go).
	History(ctx context.Context) (any, error)
	// Preview renders the waiting page in state with sample numbers, with the
	// header fields it must go out with.
	Preview(state string, position int, lang string) ([]byte, http.Header, error)
}

// control is the AdminRoom of the newest handler of a room's name.
type control struct {
	h *Handler
}

func (r control) Name() string { return r.h.Name }

// overrides are the runtime changes made through the admin API. They are kept in the
// room's store and win over the configuration until cleared.
type overrides struct {
	// Capacity replaces the configured capacity.
	Capacity *int `json:"capacity,omitempty"`
	// Rate replaces the configured rate limit; a Count of 0 turns the limit off.
	Rate *Rate `json:"rate,omitempty"`
	// Mode replaces the configured mode (and wins over an event's pre-queue).
	Mode *string `json:"mode,omitempty"`
	// Message replaces the configured message to the line; "" shows none.
	Message *string `json:"message,omitempty"`
	// SessionTTL, QueueTTL, AwayTTL and SessionMax replace the configured timings
	// (sessionsettings.go); a SessionMax of 0 turns it off.
	SessionTTL *period `json:"session_ttl,omitempty"`
	QueueTTL   *period `json:"queue_ttl,omitempty"`
	AwayTTL    *period `json:"away_ttl,omitempty"`
	SessionMax *period `json:"session_max,omitempty"`
	// ProofOfWork replaces the configured proof_of_work difficulty; 0 turns it off.
	ProofOfWork *int `json:"proof_of_work,omitempty"`
}

// settings are the values a room is configured with.
type settings struct {
	Capacity   int    `json:"capacity"`
	Rate       *Rate  `json:"rate"`
	Mode       string `json:"mode"`
	SessionTTL string `json:"session_ttl"`
	QueueTTL   string `json:"queue_ttl"`
	AwayTTL    string `json:"away_ttl"`
	SessionMax string `json:"session_max"` // "" while off
	Message    string `json:"message"`
	// ProofOfWork is the configured difficulty, 0 when off.
	ProofOfWork int `json:"proof_of_work"`
}

// eventInfo is the scheduled event in progress or in its pre-queue.
type eventInfo struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Phase is "prequeue" (before the start: everyone queues) or "running".
	Phase string `json:"phase"`
	// StartsInSeconds counts down to the start during the pre-queue.
	StartsInSeconds *int `json:"starts_in_seconds,omitempty"`
	Shuffle         bool `json:"shuffle"`
}

// roomInfo is the admin API's room object (docs/admin-api.md).
type roomInfo struct {
	Name string `json:"name"`
	// Mode, Capacity and Rate are the effective values: configuration, then the event in
	// progress, then the admin overrides. Mode is "prequeue" during an event's pre-queue.
	Mode     string `json:"mode"`
	Capacity int    `json:"capacity"`
	// Rate is the admission rate limit; null when admissions are bound by capacity only.
	Rate *Rate `json:"rate"`
	// The effective session_ttl, queue_ttl, away_ttl and session_max ("" while off).
	sessionInfo
	Active  int `json:"active"`
	Waiting int `json:"waiting"`
	// Away counts the waiters gone quiet past queue_ttl who keep their place.
	Away          int    `json:"away"`
	AdmittedTotal uint64 `json:"admitted_total"`
	// ETASeconds is the estimated wait of someone arriving now (null: no data yet).
	ETASeconds *int `json:"eta_seconds"`
	// AdmissionsPerMinute is the measured throughput over the last minutes (null: no
	// data yet).
	AdmissionsPerMinute *float64   `json:"admissions_per_minute"`
	Store               string     `json:"store"`
	Configured          settings   `json:"configured"`
	Overrides           overrides  `json:"overrides"`
	Event               *eventInfo `json:"event"`
	// Message is what the line is told now ("" for nothing).
	Message string `json:"message"`
	// NextEvent is the next scheduled event whose queue has not opened yet, with
	// Phase "scheduled" and StartsInSeconds counting down to its start; null if none.
	NextEvent *eventInfo `json:"next_event"`
	// ProofOfWork is the difficulty a new visitor's proof must meet now, 0 when off.
	ProofOfWork int `json:"proof_of_work"`
}

// Info reads the room's state from the store (fresh, not the tick's cached copy).
func (r control) info(ctx context.Context) (roomInfo, error) {
	st, err := r.h.store.Stats(ctx)
	if err != nil {
		return roomInfo{}, fmt.Errorf("reading room counters: %w", err)
	}
	o, err := r.readOverrides(ctx)
	if err != nil {
		return roomInfo{}, err
	}
	r.h.room.overrides.Store(&o) // what this call reads is what it reports
	now := r.h.clock.Now()
	p := r.h.policyAt(now)
	configuredMode := r.h.Mode
	if configuredMode == "" {
		configuredMode = queue.ModeFIFO
	}
	info := roomInfo{
		Name:          r.h.Name,
		Mode:          p.mode,
		Capacity:      p.capacity,
		Active:        st.Active,
		Waiting:       st.Waiting,
		Away:          st.Away,
		AdmittedTotal: st.AdmittedTotal,
		Store:         r.h.storeType,
		Configured: settings{
			Capacity:   r.h.Capacity,
			Rate:       r.h.Rate,
			Mode:       configuredMode,
			SessionTTL: time.Duration(r.h.SessionTTL).String(),
			QueueTTL:   time.Duration(r.h.QueueTTL).String(),
			AwayTTL:    r.h.sessionSettingsWith(nil).awayTTL.String(),
			SessionMax: r.h.sessionSettingsWith(nil).info().SessionMax,
			Message:    r.h.Message,
		},
		sessionInfo: r.h.sessions().info(),
		Overrides:   o,
		Message:     r.h.message(),
	}
	if p.rate.limits() {
		info.Rate = p.rate
	}
	if ev := p.event; ev != nil {
		info.Event = &eventInfo{Start: ev.Start, End: ev.End, Phase: "running", Shuffle: ev.Shuffle}
		if p.prequeue {
			info.Mode, info.Event.Phase = "prequeue", "prequeue"
			s := ceilSeconds(p.startsIn)
			info.Event.StartsInSeconds = &s
		}
	}
	info.NextEvent = nextEvent(r.h.Events, now)
	info.ProofOfWork = r.h.difficulty()
	info.Configured.ProofOfWork = r.h.ProofOfWork
	if rate, ok := r.h.room.est.Rate(); ok {
		perMinute := rate * 60
		info.AdmissionsPerMinute = &perMinute
	}
	if rate, ok := r.h.throughput(p); ok && !p.holds() {
		eta := int(queue.ETA(st.Waiting+1, rate) / time.Second)
		info.ETASeconds = &eta
	}
	return info, nil
}

func (r control) readOverrides(ctx context.Context) (overrides, error) {
	var o overrides
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

// inputError is a request the caller got wrong: the admin API answers 400 with it.
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }

func inputErrorf(format string, args ...any) error {
	return &inputError{msg: fmt.Sprintf(format, args...)}
}

// errNoVisitor is returned when removing a visitor the room does not hold.
var errNoVisitor = errors.New("no such visitor in this room")

// apiError gives err the status the admin API answers it with: the caller's mistakes
// are 400, a visitor that is not there 404, and the rest (a store that cannot be
// reached) 503.
func apiError(err error) error {
	if err == nil {
		return nil
	}
	code := http.StatusServiceUnavailable
	var input *inputError
	switch {
	case errors.As(err, &input):
		code = http.StatusBadRequest
	case errors.Is(err, errNoVisitor):
		code = http.StatusNotFound
	}
	return caddy.APIError{HTTPStatus: code, Err: err}
}

func (r control) Info(ctx context.Context) (any, error) {
	info, err := r.info(ctx)
	return info, apiError(err)
}

func (r control) Patch(ctx context.Context, body []byte) (any, error) {
	info, err := r.patch(ctx, body)
	return info, apiError(err)
}

func (r control) Admit(ctx context.Context, count int) (int, error) {
	n, err := r.admit(ctx, count)
	return n, apiError(err)
}

func (r control) RemoveVisitor(ctx context.Context, rawID string) error {
	id, err := queue.ParseVisitorID(rawID)
	if err != nil {
		return apiError(inputErrorf("%v", err))
	}
	return apiError(r.removeVisitor(ctx, id))
}

func (r control) Reset(ctx context.Context) error { return apiError(r.reset(ctx)) }

// Patch applies a JSON document of runtime changes: {"capacity": 20} sets a value,
// {"capacity": null} restores the configured one. Unknown fields and bad values are
// an *inputError, and then nothing changes.
func (r control) patch(ctx context.Context, body []byte) (roomInfo, error) {
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&fields); err != nil {
		return roomInfo{}, inputErrorf("malformed JSON: %v", err)
	}
	// Anything after the value, even a lone ] or } (which More does not see), is a
	// malformed body.
	if _, err := dec.Token(); err != io.EOF {
		return roomInfo{}, inputErrorf("malformed JSON: more than one value")
	}
	if fields == nil {
		return roomInfo{}, inputErrorf("want a JSON object such as {\"capacity\": 20}")
	}
	// o holds the new values of the fields named; saveOverrides merges them into
	// what the store holds. The fields go in name order, so that a body with several
	// bad fields is refused for the same one every time.
	var o overrides
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		raw := fields[name]
		switch name {
		case "capacity":
			if string(raw) == "null" {
				o.Capacity = nil
				continue
			}
			var n int
			if err := json.Unmarshal(raw, &n); err != nil {
				return roomInfo{}, inputErrorf("capacity must be a whole number or null, got %s", clip(raw))
			}
			if n <= 0 {
				return roomInfo{}, inputErrorf("capacity must be greater than 0, got %d", n)
			}
			o.Capacity = &n
		case "rate":
			rate, err := patchRate(raw)
			if err != nil {
				return roomInfo{}, err
			}
			o.Rate = rate
		case "mode":
			if string(raw) == "null" {
				o.Mode = nil
				continue
			}
			var m string
			if err := json.Unmarshal(raw, &m); err != nil {
				return roomInfo{}, inputErrorf("mode must be a string or null, got %s", clip(raw))
			}
			if err := queue.CheckMode(m); err != nil {
				return roomInfo{}, inputErrorf("mode must be one of %s, got %q", strings.Join(queue.Modes, ", "), clip([]byte(m)))
			}
			o.Mode = &m
		case "message":
			m, err := patchMessage(raw)
			if err != nil {
				return roomInfo{}, err
			}
			o.Message = m
		case "session_ttl", "queue_ttl", "away_ttl", "session_max":
			if err := o.patchSession(name, raw); err != nil {
				return roomInfo{}, err
			}
		case "proof_of_work":
			bits, err := patchProofOfWork(raw)
			if err != nil {
				return roomInfo{}, err
			}
			o.ProofOfWork = bits
		default:
			return roomInfo{}, inputErrorf("unknown field %q (the fields are: capacity, rate, mode, message, session_ttl, queue_ttl, away_ttl, session_max, proof_of_work)", clip([]byte(name)))
		}
	}
	saved, err := r.saveOverrides(ctx, fields, o)
	if err != nil {
		return roomInfo{}, err
	}
	r.forEachHandler(func(h *Handler) { h.room.overrides.Store(&saved) })
	r.applyNow(ctx)
	return r.info(ctx)
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
		return nil, inputErrorf(`rate must be {"count": n, "per": "1m"}, "off" or null, got %s`, clip(raw))
	}
	if err := rate.validate(); err != nil {
		return nil, inputErrorf("%v", err)
	}
	return &rate, nil
}

// Admit lets the next n waiters in at once, beyond capacity, rate and mode if need be,
// and reports how many were admitted. They count against the rate window, so regular
// admissions slow down to keep the rate over the window.
func (r control) admit(ctx context.Context, n int) (int, error) {
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

// RemoveVisitor takes one visitor (queued or admitted) out of the room. An admitted
// visitor's other instances learn it at their next throttled touch (seconds).
func (r control) removeVisitor(ctx context.Context, id queue.VisitorID) error {
	ok, err := r.h.store.Leave(ctx, id)
	if err != nil {
		return fmt.Errorf("removing visitor: %w", err)
	}
	if !ok {
		return errNoVisitor
	}
	r.forEachHandler(func(h *Handler) { h.room.forgetTouched(id) })
	r.applyNow(ctx)
	return nil
}

// Reset empties the queue and the active set.
func (r control) reset(ctx context.Context) error {
	if err := r.h.store.Reset(ctx); err != nil {
		return fmt.Errorf("resetting room: %w", err)
	}
	r.forEachHandler(func(h *Handler) { h.room.touched.Clear() })
	r.applyNow(ctx)
	return nil
}

// applyNow runs an admission step at once, so a change shows in the answer to the
// call that made it (a raised capacity has admitted waiters by then). Other handlers of
// the room in this process are kicked; other instances follow within a tick.
func (r control) applyNow(ctx context.Context) {
	r.h.room.tick(ctx)
	r.forEachHandler(func(h *Handler) {
		if h != r.h {
			h.room.kick()
		}
	})
}

func (r control) forEachHandler(fn func(*Handler)) {
	registry.Lock()
	hs := append([]*Handler(nil), registry.rooms[r.h.Name]...)
	registry.Unlock()
	for _, h := range hs {
		fn(h)
	}
}
