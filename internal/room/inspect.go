package room

import (
	"context"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/fairness"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// What a running room holds, for the module and its tests to read.

// Tick runs one round of the room loop now: the secret, the overrides, an event's
// lottery, the admission step and the counters.
func (rm *Room) Tick(ctx context.Context) { rm.tick(ctx) }

// Draws are the room's draws on this instance.
func (rm *Room) Draws() *fairness.Draws { return rm.draws }

// Keys are the room's signing keys; nil until a secret is agreed.
func (rm *Room) Keys() *token.Keyring { return rm.keys.Load() }

// Stats are the counters the room loop read last.
func (rm *Room) Stats() *queue.Stats { return rm.stats.Load() }

// Throughput is the measured admissions per second, when known.
func (rm *Room) Throughput() (float64, bool) { return rm.est.Rate() }

// HeartbeatEvery is how often the room's hub hears of its connected waiters.
func (rm *Room) HeartbeatEvery() time.Duration { return time.Duration(rm.hub.HeartbeatEvery()) }

// LastOutageLog is when the room last logged its store as unavailable; zero if never.
func (rm *Room) LastOutageLog() time.Time {
	if ns := rm.lastErrLog.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// UnavailableView is what a new visitor is told at now while the store is down and
// the room fails closed.
func (rm *Room) UnavailableView(now time.Time) (page.View, *settings.Snapshot) {
	s := rm.Settings(now)
	return rm.unavailableView(s), s
}
