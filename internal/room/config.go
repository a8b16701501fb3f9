package room

import (
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/history"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
)

// Config is what a room is started with: the module's configuration with its
// defaults filled in and checked (Check), the store it runs on, and what it reports
// to. It is not changed after New.
type Config struct {
	Name string
	// Config are the runtime settings as configured, and the events.
	settings.Config

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

	// DrawPage is the path of the room's public draw page on the site ("" when it is
	// off, and with it the receipts): internal/fairness.
	DrawPage string
	// Random is where the draws' seeds and entry keys come from: nil, the system's
	// random source. Only a rehearsal sets it, to a seeded generator, so that a
	// rehearsal replays byte for byte.
	Random io.Reader

	Store     queue.Store
	StoreType string // the store module's name, for the admin API

	// ParseDuration reads the admin API's durations as the configuration reads them.
	ParseDuration func(string) (time.Duration, error)

	Clock    Clock
	Logger   *zap.Logger
	Metrics  Metrics
	History  *history.History // the console's last hour, kept across reloads by the module
	Siblings func() []*Room   // the running rooms of this name in this process, this one included
}

// PerIP are the per-address caps (the module's PerIP says what each means).
type PerIP struct {
	MaxJoins       int
	JoinWindow     time.Duration
	MaxConnections int
}

// CheckPerIP refuses caps that are negative, or a join window the room cannot keep.
func CheckPerIP(p PerIP) error {
	if p.MaxJoins < 0 || p.MaxConnections < 0 || p.JoinWindow < 0 {
		return fmt.Errorf("per_ip caps must not be negative, got max_joins %d, join_window %v, max_connections %d",
			p.MaxJoins, p.JoinWindow, p.MaxConnections)
	}
	if p.JoinWindow > 0 {
		return settings.AtLeast("per_ip join_window", p.JoinWindow, settings.MinWindow)
	}
	return nil
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
	// AdmittedBy counts the admissions this instance's store calls made, by reason
	// (a moved session under queue.ReasonHandoff).
	AdmittedBy(n queue.ByReason)
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
