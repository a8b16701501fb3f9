package room

import (
	"encoding/json"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// Config is what a room is started with: the module's configuration with its
// defaults filled in and checked (Check), the store it runs on, and what it reports
// to. It is not changed after New.
type Config struct {
	Name string
	// Runtime are the settings the admin API can change while the room runs, as
	// configured.
	Runtime
	Events []Event

	// PerIP caps what one client address may do on this instance; zero: no caps.
	PerIP PerIP

	// FailOpen says that a request the store cannot decide on goes through; it only
	// shapes what the outage log says, the module answers the request.
	FailOpen bool

	// Lang fixes the page's language ("" lets each visitor's Accept-Language pick);
	// Page renders it. The room renders pages only for the admin API's preview.
	Lang string
	Page *page.Writer

	// Secrets sign and verify the room's cookies, passes and challenges, the first
	// signing; nil has the room agree on a generated one through the store.
	Secrets [][]byte

	Store     queue.Store
	StoreType string // the store module's name, for the admin API

	// ParseDuration reads the admin API's durations as the configuration reads them.
	ParseDuration func(string) (time.Duration, error)

	Clock    Clock
	Logger   *zap.Logger
	Metrics  Metrics
	History  *History       // the console's last hour, kept across reloads by the module
	Siblings func() []*Room // the running rooms of this name in this process, this one included
}

// Rate is an admission rate limit: at most Count admissions in any window of Per.
type Rate struct {
	Count int
	Per   time.Duration
}

// limits reports whether the rate limits anything (a zero rate is none).
func (r Rate) limits() bool { return r.Count > 0 && r.Per > 0 }

// perSecond is the rate's admissions per second.
func (r Rate) perSecond() float64 { return float64(r.Count) / r.Per.Seconds() }

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

// opens is when the event's queue opens: Start, or the pre-queue's start.
func (e *Event) opens() time.Time { return e.Start.Add(-e.Prequeue) }

// key names the event's lottery in the store, so that it is drawn once whatever the
// number of instances (and reloads) that reach the start.
func (e *Event) key() string { return e.Start.UTC().Format(time.RFC3339Nano) }

// PerIP are the per-address caps (the module's PerIP says what each means).
type PerIP struct {
	MaxJoins       int
	JoinWindow     time.Duration
	MaxConnections int
}

// Metrics is what the room counts, for the module to export.
type Metrics interface {
	// Admitted counts visitors this instance admitted, Queued those it queued,
	// Abandoned waiters who left or whose place was dropped.
	Admitted(n int)
	Queued()
	Abandoned(n int)
	// NoShows counts visitors admitted from the line whose slots this instance's
	// steps gave back for not arriving within arrive_ttl.
	NoShows(n int)
	// Handoff counts a place this instance gave to another device (handoff.go).
	Handoff()
	// Waited records how long an admitted waiter waited in line.
	Waited(d time.Duration)
	// Counters are the room-wide counters and the effective capacity, each tick.
	Counters(st *queue.Stats, capacity int)
	// Measured adds what this instance measured of the shop since the last call
	// (each control period): the admitted requests by time to first byte, their total
	// time, and the failed ones.
	Measured(s *queue.Sample, total time.Duration)
	// LatencyTarget is the adaptive capacity's p90 target in force, 0 while it is
	// off, each tick.
	LatencyTarget(d time.Duration)
}

// Clock tells the time; tests give their own.
type Clock interface{ Now() time.Time }

// SystemClock is the clock of a running room.
type SystemClock struct{}

// Now is the system's time.
func (SystemClock) Now() time.Time { return time.Now() }
