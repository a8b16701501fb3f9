package room

import (
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
)

// rejectRetryAfter is when a turned-away visitor is told to come back, in seconds.
const rejectRetryAfter = 60

// teller returns what a waiter is told under s at now, by position: the counters and
// the throughput are read once, so the hub can build thousands of views per round
// without touching the estimator each time.
func (rm *Room) teller(s *settings.Snapshot, now time.Time) func(position int) page.View {
	st := rm.stats.Load()
	rate, known := rm.throughput(s)
	return func(position int) page.View { return rm.viewAt(position, st, rate, known, s, now) }
}

// throughput is the admissions per second a wait is estimated with: what the room
// measured, but never more than the rate limit allows (a burst admitted at join would
// otherwise promise a rate-bound queue more than it gets).
func (rm *Room) throughput(s *settings.Snapshot) (float64, bool) {
	rate, known := rm.est.Rate()
	if known && s.Rate.Limits() {
		rate = min(rate, s.Rate.PerSecond())
	}
	return rate, known
}

// viewAt builds what the waiter at position is told from counters and a throughput
// read once (see teller).
func (rm *Room) viewAt(position int, st *queue.Stats, rate float64, rateKnown bool, s *settings.Snapshot, now time.Time) page.View {
	v := page.View{
		Room:           rm.cfg.Name,
		Status:         "queued",
		Position:       position,
		Waiting:        max(st.Waiting, position),
		Active:         st.Active,
		Capacity:       s.Capacity,
		RefreshSeconds: s.RefreshSeconds(),
		AwayTTLSeconds: int(s.AwayTTL / time.Second),
		Message:        s.Message,
	}
	if rateKnown && !s.Holds() {
		secs := int(queue.ETA(position, rate) / time.Second)
		v.ETASeconds = &secs
	}
	if s.Prequeue {
		secs := ceilSeconds(s.StartsIn(now))
		v.StartsInSeconds, v.Prequeue, v.Lottery = &secs, true, s.Event.Shuffle
	}
	return v
}

// ceilSeconds rounds up, so a countdown reaches 0 at the start and not before.
func ceilSeconds(d time.Duration) int { return int((d + time.Second - 1) / time.Second) }

// statusView is what a waiter is told right after the store call made for it (a join
// or a status): the counts that call saw, not the room loop's last tick, so a visitor
// admitted a moment ago is in active and the waiter's own arrival is in waiting.
func (rm *Room) statusView(st queue.Status, s *settings.Snapshot, now time.Time) page.View {
	rate, known := rm.throughput(s)
	seen := queue.Stats{Active: st.Active, Waiting: st.Waiting}
	v := rm.viewAt(st.Position, &seen, rate, known, s, now)
	v.Returned, v.Missed = st.Returned, st.Missed
	return v
}

// rejectedView is what a turned-away visitor is told.
func (rm *Room) rejectedView(s *settings.Snapshot) page.View {
	st := rm.stats.Load()
	return page.View{Room: rm.cfg.Name, Status: "rejected", Waiting: st.Waiting, Active: st.Active,
		Capacity: s.Capacity, RefreshSeconds: rejectRetryAfter, Message: s.Message}
}

// unavailableView is what a new visitor is told while the store is down and the room
// fails closed.
func (rm *Room) unavailableView(s *settings.Snapshot) page.View {
	return page.View{Room: rm.cfg.Name, Status: "unavailable", Capacity: s.Capacity,
		RefreshSeconds: s.RefreshSeconds(), Message: s.Message}
}
