package room

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/capacity"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/fairness"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/history"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
)

// The admin operations: what the admin API asks of a running room. Errors are an
// InputError for the caller's mistakes, ErrNoVisitor for what is not there, and
// anything else for a store that cannot be reached. Changes go through the store, so
// every instance sharing it applies them within one admission tick.

// EventInfo is a scheduled event, in progress or next.
type EventInfo struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Phase is "prequeue" (before the start: everyone queues), "running", or
	// "scheduled" for the next event.
	Phase string `json:"phase"`
	// StartsInSeconds counts down to the start during the pre-queue and for the next
	// event.
	StartsInSeconds *int `json:"starts_in_seconds,omitempty"`
	Shuffle         bool `json:"shuffle"`
}

// Timings are the effective session_ttl, queue_ttl, away_ttl and session_max.
type Timings struct {
	SessionTTL string `json:"session_ttl"`
	QueueTTL   string `json:"queue_ttl"`
	AwayTTL    string `json:"away_ttl"`
	// SessionMax is "" while off.
	SessionMax string `json:"session_max"`
	// ArriveTTL is "0s" while off.
	ArriveTTL string `json:"arrive_ttl"`
}

// Info is the admin API's room object (docs/admin-api.md).
type Info struct {
	Name string `json:"name"`
	// Mode, Capacity and Rate are the effective values: configuration, then the event in
	// progress, then the admin overrides. Mode is "prequeue" during an event's pre-queue.
	Mode     string `json:"mode"`
	Capacity int    `json:"capacity"`
	// Rate is the admission rate limit; null when admissions are bound by capacity only.
	Rate *settings.Rate `json:"rate"`
	Timings
	Active  int `json:"active"`
	Waiting int `json:"waiting"`
	// Away counts the waiters gone quiet past queue_ttl who keep their place.
	Away          int    `json:"away"`
	AdmittedTotal uint64 `json:"admitted_total"`
	// NoShows counts the visitors admitted from the line who did not arrive within
	// arrive_ttl and gave the slot back (room-wide, since the store began).
	NoShows uint64 `json:"no_shows"`
	// Handoffs counts the places moved to another device (room-wide, since the store
	// began).
	Handoffs uint64 `json:"handoffs"`
	// ETASeconds is the estimated wait of someone arriving now (null: no data yet).
	ETASeconds *int `json:"eta_seconds"`
	// AdmissionsPerMinute is the measured throughput over the last minutes (null: no
	// data yet).
	AdmissionsPerMinute *float64 `json:"admissions_per_minute"`
	Store               string   `json:"store"`
	// Configured are the runtime settings as configured (Runtime.MarshalJSON).
	Configured settings.Runtime   `json:"configured"`
	Overrides  settings.Overrides `json:"overrides"`
	Event      *EventInfo         `json:"event"`
	// Message is what the line is told now ("" for nothing).
	Message string `json:"message"`
	// NextEvent is the next scheduled event whose queue has not opened yet; null if none.
	NextEvent *EventInfo `json:"next_event"`
	// ProofOfWork is the difficulty a new visitor's proof must meet now, 0 when off.
	ProofOfWork int `json:"proof_of_work"`
	// Adapt is the adaptive capacity in force and its last decision; null when off.
	Adapt *capacity.Info `json:"adapt"`
	// Fleet is the instances serving the room and the format level they all read.
	Fleet FleetInfo `json:"fleet"`
	// Draw is the room's current draw (docs/fairness.md); null when it has none.
	Draw *fairness.Info `json:"draw"`
	// AdmittedByReason counts the admissions of the last 24 hours by reason, room-wide.
	AdmittedByReason map[string]uint64 `json:"admitted_by_reason"`
}

// timingsOf shows s's timings.
func timingsOf(sessionTTL, queueTTL, awayTTL, sessionMax time.Duration) Timings {
	t := Timings{SessionTTL: sessionTTL.String(), QueueTTL: queueTTL.String(), AwayTTL: awayTTL.String()}
	if sessionMax > 0 {
		t.SessionMax = sessionMax.String()
	}
	return t
}

// Info reads the room's state from the store (fresh, not the tick's cached copy).
func (rm *Room) Info(ctx context.Context) (Info, error) {
	st, err := rm.cfg.Store.Stats(ctx)
	if err != nil {
		return Info{}, fmt.Errorf("reading room counters: %w", err)
	}
	o, err := rm.readOverrides(ctx)
	if err != nil {
		return Info{}, err
	}
	rm.settle(o) // what this call reads is what it reports
	cfg := rm.cfg
	now := cfg.Clock.Now()
	s := rm.Settings(now)
	info := Info{
		Name:          cfg.Name,
		Mode:          s.Mode,
		Capacity:      s.Capacity,
		Timings:       timingsOf(s.SessionTTL, s.QueueTTL, s.AwayTTL, s.SessionMax),
		Active:        st.Active,
		Waiting:       st.Waiting,
		Away:          st.Away,
		AdmittedTotal: st.AdmittedTotal,
		NoShows:       st.NoShows,
		Handoffs:      st.Handoffs,
		Store:         cfg.StoreType,
		Configured:    cfg.Runtime,
		Overrides:     o.Operators(),
		Message:       s.Message,
		Adapt:         capacity.InfoOf(s.Adapt, o.Adapted),
		NextEvent:     nextEvent(cfg.Events, now),
		ProofOfWork:   s.ProofOfWork,
	}
	f := rm.Fleet()
	info.Fleet = FleetInfo{Instances: f.Instances, Reads: f.Reads, Level: queue.FormatLevel}
	minutes, err := cfg.Store.Admissions(ctx, now.Add(-queue.AdmissionsKept), now)
	if err != nil {
		return Info{}, fmt.Errorf("reading the admissions by reason: %w", err)
	}
	info.Draw, info.AdmittedByReason = rm.draws.Info(), fairness.ByReason(minutes)
	info.ArriveTTL = s.ArriveTTL.String()
	if s.Rate.Limits() {
		r := s.Rate
		info.Rate = &r
	}
	if ev := s.Event; ev != nil {
		info.Event = &EventInfo{Start: ev.Start, End: ev.End, Phase: "running", Shuffle: ev.Shuffle}
		if s.Prequeue {
			info.Mode, info.Event.Phase = "prequeue", "prequeue"
			secs := ceilSeconds(s.StartsIn(now))
			info.Event.StartsInSeconds = &secs
		}
	}
	if rate, ok := rm.est.Rate(); ok {
		perMinute := rate * 60
		info.AdmissionsPerMinute = &perMinute
	}
	if rate, ok := rm.throughput(s); ok && !s.Holds() {
		eta := int(queue.ETA(st.Waiting+1, rate) / time.Second)
		info.ETASeconds = &eta
	}
	return info, nil
}

func cmpOr(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// nextEvent is the first event whose queue opens after now, for the console's
// countdown; nil when none is scheduled.
func nextEvent(events []settings.Event, now time.Time) *EventInfo {
	var next *settings.Event
	for i := range events {
		ev := &events[i]
		if ev.Opens().After(now) && (next == nil || ev.Start.Before(next.Start)) {
			next = ev
		}
	}
	if next == nil {
		return nil
	}
	secs := ceilSeconds(next.Start.Sub(now))
	return &EventInfo{Start: next.Start, End: next.End, Phase: "scheduled", StartsInSeconds: &secs, Shuffle: next.Shuffle}
}

// Patch applies a JSON document of runtime changes: {"capacity": 20} sets a value,
// {"capacity": null} restores the configured one. Unknown fields and bad values are
// an InputError, and then nothing changes.
func (rm *Room) Patch(ctx context.Context, body []byte) (Info, error) {
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&fields); err != nil {
		return Info{}, inputErrorf("malformed JSON: %v", err)
	}
	// Anything after the value, even a lone ] or } (which More does not see), is a
	// malformed body.
	if _, err := dec.Token(); err != io.EOF {
		return Info{}, inputErrorf("malformed JSON: more than one value")
	}
	if fields == nil {
		return Info{}, inputErrorf("want a JSON object such as {\"capacity\": 20}")
	}
	// o holds the new values of the fields named; saveOverrides merges them into
	// what the store holds.
	p := settings.Patching{Config: &rm.cfg.Config, InForce: rm.settings.Load(), ParseDuration: rm.cfg.ParseDuration}
	o, err := p.Patch(fields)
	if err != nil {
		return Info{}, inputError{err}
	}
	saved, err := rm.saveOverrides(ctx, fields, o)
	if err != nil {
		return Info{}, err
	}
	for _, sib := range rm.cfg.Siblings() {
		sib.settle(saved)
	}
	rm.settle(saved)
	rm.applyNow(ctx)
	return rm.Info(ctx)
}

// Admit lets the next n waiters in at once, beyond capacity, rate and mode if need be,
// and reports how many were admitted. They count against the rate window, so regular
// admissions slow down to keep the rate over the window.
func (rm *Room) Admit(ctx context.Context, n int) (int, error) {
	if n <= 0 {
		return 0, inputErrorf("count must be greater than 0, got %d", n)
	}
	now := rm.cfg.Clock.Now()
	res, err := rm.cfg.Store.AdmitNow(ctx, n, now, rm.limitsOf(rm.Settings(now)))
	if err != nil {
		return 0, fmt.Errorf("admitting waiters: %w", err)
	}
	rm.cfg.Metrics.Admitted(len(res.Admitted))
	rm.cfg.Metrics.AdmittedBy(res.ByReason)
	rm.cfg.Metrics.Abandoned(res.Abandoned)
	rm.cfg.Metrics.NoShows(res.NoShows) // a store may give back no-shows in any step
	return len(res.Admitted), nil
}

// RemoveVisitor takes one visitor (queued or admitted; its id as the admin API shows
// ids) out of the room. An admitted visitor's other instances learn it at their next
// throttled touch (seconds).
func (rm *Room) RemoveVisitor(ctx context.Context, rawID string) error {
	id, err := queue.ParseVisitorID(rawID)
	if err != nil {
		return inputError{err}
	}
	ok, err := rm.cfg.Store.Leave(ctx, id)
	if err != nil {
		return fmt.Errorf("removing visitor: %w", err)
	}
	if !ok {
		return ErrNoVisitor
	}
	rm.forgetTouched(id)
	for _, sib := range rm.cfg.Siblings() {
		sib.forgetTouched(id)
	}
	rm.applyNow(ctx)
	return nil
}

// Reset empties the queue and the active set.
func (rm *Room) Reset(ctx context.Context) error {
	if err := rm.cfg.Store.Reset(ctx); err != nil {
		return fmt.Errorf("resetting room: %w", err)
	}
	rm.touched.Clear()
	rm.keyedSince.Clear()
	for _, sib := range rm.cfg.Siblings() {
		sib.touched.Clear()
		sib.keyedSince.Clear()
	}
	rm.applyNow(ctx)
	return nil
}

// applyNow runs an admission step at once, so a change shows in the answer to the
// call that made it (a raised capacity has admitted waiters by then). Other rooms of
// the name in this process are kicked; other instances follow within a tick.
func (rm *Room) applyNow(ctx context.Context) {
	rm.tick(ctx)
	for _, sib := range rm.cfg.Siblings() {
		if sib != rm {
			sib.kick()
		}
	}
}

// History is the room's last hour on this instance, a point a minute, oldest first.
func (rm *Room) History() history.Info {
	return history.Info{
		Room:        rm.cfg.Name,
		StepSeconds: int(history.Step / time.Second),
		Points:      rm.cfg.History.Snapshot(rm.cfg.Clock.Now()),
	}
}
