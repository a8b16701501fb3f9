package room

import (
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
)

// Settings are what the room runs with at now: the current snapshot, or a new one
// when now is past the event phase it was made in.
func (rm *Room) Settings(now time.Time) *settings.Snapshot {
	s := rm.settings.Load()
	if s.Current(now) {
		return s
	}
	next := settings.At(&rm.cfg.Config, s.Overrides, now)
	rm.settings.CompareAndSwap(s, next) // a lost race leaves a snapshot as new
	return next
}

// settle makes the room's settings anew under the overrides o.
func (rm *Room) settle(o settings.Overrides) *settings.Snapshot {
	s := settings.At(&rm.cfg.Config, o, rm.cfg.Clock.Now())
	rm.settings.Store(s)
	rm.hub.SetHeartbeatEvery(heartbeatEvery(s.QueueTTL)) // a PATCHed queue_ttl
	return s
}

// heartbeatEvery is how often the hub hears of its connected waiters: well within
// queue_ttl, so a connected waiter never goes away.
func heartbeatEvery(queueTTL time.Duration) time.Duration {
	return min(queueTTL/3, 10*time.Second)
}
