package waitingroom

import (
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/capacity"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
	"github.com/caddyserver/caddy/v2"
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

// engine is the rate as the room takes it.
func (r *Rate) engine() settings.Rate {
	return settings.Rate{Count: r.Count, Per: time.Duration(r.Per)}
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

// engine is the event as the room takes it.
func (e *Event) engine() settings.Event {
	ev := settings.Event{Start: e.Start, End: e.End, Prequeue: time.Duration(e.Prequeue), Shuffle: e.Shuffle,
		Capacity: e.Capacity, Mode: e.Mode}
	if e.Rate != nil {
		r := e.Rate.engine()
		ev.Rate = &r
	}
	return ev
}

// PerIP are optional caps per client address, against floods from one machine. They
// are per instance (a fleet of n instances allows up to n times as much), kept in
// memory, and off by default: many real visitors can share one address behind a
// carrier-grade NAT, an office or a campus, so set them generously. Behind a proxy
// they count the address Caddy determined: set the server's trusted_proxies_strict
// too, or a client that forges the leftmost X-Forwarded-For is a new address on
// every request.
type PerIP struct {
	// MaxJoins is how many new visitors one address may start per JoinWindow. Over it,
	// the answer is 429 with Retry-After, and nothing is stored or counted. 0: no cap.
	MaxJoins int `json:"max_joins,omitempty"`

	// JoinWindow is the window of MaxJoins, at least 1s. Default: 1m.
	JoinWindow caddy.Duration `json:"join_window,omitempty"`

	// MaxConnections is how many waiting-page WebSockets one address may hold open at
	// once. Over it, the upgrade is refused with 429 and the page falls back to
	// polling. 0: no cap.
	MaxConnections int `json:"max_connections,omitempty"`
}

// engine is the caps as the room takes them.
func (p *PerIP) engine() room.PerIP {
	return room.PerIP{MaxJoins: p.MaxJoins, JoinWindow: time.Duration(p.JoinWindow), MaxConnections: p.MaxConnections}
}

// Adapt turns on the adaptive capacity: the room measures, for every request it lets
// through, the shop's time to first byte (from when the shop had the whole request)
// and whether it failed, and sets its capacity to keep both under their targets,
// reading at most 8 of each visitor's requests a control period, so that one client
// weighs as one visitor. What Caddy or the client did (a body that could not be read,
// a client gone) is not counted. The configured capacity is where it starts. See
// docs/adaptive-capacity.md.
type Adapt struct {
	// Latency is the target for the 90th percentile of the shop's time to first
	// byte, such as "800ms". Required.
	Latency caddy.Duration `json:"latency,omitempty"`
	// Errors is the target for the share of admitted requests that failed (a 5xx,
	// or an error from the next handler), as a percentage such as "2%". Default: 5%.
	Errors string `json:"errors,omitempty"`
	// Min and Max bound the capacity it sets. Defaults: 1, and 10 × capacity.
	Min int `json:"min,omitempty"`
	Max int `json:"max,omitempty"`
}

// engine is adapt as the room takes it, for a room of that capacity, defaults filled
// in and checked.
func (a *Adapt) engine(roomCapacity int) (*capacity.Targets, error) {
	return capacity.Configured(time.Duration(a.Latency), a.Errors, a.Min, a.Max, roomCapacity)
}

// engineEvents are the events as the room takes them.
func engineEvents(events []Event) []settings.Event {
	out := make([]settings.Event, len(events))
	for i := range events {
		out[i] = events[i].engine()
	}
	return out
}
