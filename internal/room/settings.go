package room

import (
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/capacity"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// Settings are what a room runs with at one moment: the configuration, then the event
// in progress (or in its pre-queue), then the admin API's overrides, each winning over
// the one before. A Settings is never changed once made: the room makes a new one on
// each tick's read of the overrides, after each PATCH, and when an event's phase
// changes, and every request reads the current one with one atomic load.
type Settings struct {
	// Runtime are the runtime settings in force: the configuration's, an event's
	// capacity, rate and mode, then the overrides.
	Runtime
	// Event is the event in progress or in its pre-queue; Prequeue says it has not
	// started (everyone queues).
	Event    *Event
	Prequeue bool

	// Overrides are what the admin API changed, which these settings include.
	Overrides Overrides

	// from and until bound the time these settings hold for: the event phase they
	// were made in.
	from, until time.Time
}

// settingsAt makes the settings of cfg under the overrides o at now.
func settingsAt(cfg *Config, o Overrides, now time.Time) *Settings {
	s := &Settings{Runtime: cfg.Runtime, Overrides: o}
	if s.Mode == "" {
		s.Mode = queue.ModeFIFO
	}
	s.from, s.until = time.Time{}, time.Unix(1<<62, 0)
	for i := range cfg.Events {
		ev := &cfg.Events[i]
		switch {
		case now.Before(ev.opens()):
			s.until = minTime(s.until, ev.opens())
			continue
		case !now.Before(ev.End):
			s.from = maxTime(s.from, ev.End)
			continue
		}
		s.Event = ev
		if now.Before(ev.Start) {
			s.Prequeue = true
			s.from, s.until = ev.opens(), ev.Start
			break
		}
		s.from, s.until = ev.Start, ev.End
		if ev.Capacity > 0 {
			s.Capacity = ev.Capacity
		}
		if ev.Rate != nil {
			s.Rate = *ev.Rate
		}
		if ev.Mode != "" {
			s.Mode = ev.Mode
		}
		break
	}
	for _, def := range runtimeSettings {
		def.apply(s, &o)
	}
	return s
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// holds reports whether nobody new is admitted (queue_all, or an event's pre-queue):
// the ETA is then unknowable.
func (s *Settings) holds() bool { return s.Prequeue || s.Mode == queue.ModeQueueAll }

// startsIn is how long until the event in its pre-queue starts.
func (s *Settings) startsIn(now time.Time) time.Duration { return s.Event.Start.Sub(now) }

// Settings are what the room runs with at now: the current snapshot, or a new one
// when now is past the event phase it was made in.
func (rm *Room) Settings(now time.Time) *Settings {
	s := rm.settings.Load()
	if !now.Before(s.from) && now.Before(s.until) {
		return s
	}
	next := settingsAt(rm.cfg, s.Overrides, now)
	rm.settings.CompareAndSwap(s, next) // a lost race leaves a snapshot as new
	return next
}

// settle makes the room's settings anew under the overrides o.
func (rm *Room) settle(o Overrides) *Settings {
	s := settingsAt(rm.cfg, o, rm.cfg.Clock.Now())
	rm.settings.Store(s)
	rm.hub.SetHeartbeatEvery(heartbeatEvery(s.QueueTTL)) // a PATCHed queue_ttl
	return s
}

// limits are the store-facing settings.
func (s *Settings) limits() queue.Limits {
	lim := queue.Limits{
		Capacity:   s.Capacity,
		SessionTTL: s.SessionTTL,
		QueueTTL:   s.QueueTTL,
		AwayTTL:    s.AwayTTL,
		SessionMax: s.SessionMax,
		ArriveTTL:  s.ArriveTTL,
	}
	if s.Rate.limits() {
		lim.Rate, lim.RatePer = s.Rate.Count, s.Rate.Per
	}
	switch {
	case s.holds(), s.Mode == queue.ModeSuspended:
		// Suspended: the loop still drops the expired, so the counts stay honest.
		lim.Hold = true
	case s.Mode == queue.ModeRandom:
		lim.Random = true
	case s.Mode == queue.ModePassthrough:
		lim.Capacity, lim.Rate, lim.RatePer = maxCapacity, 0, 0
	case s.Mode == queue.ModeReject:
		lim.NoQueue = true
	}
	return lim
}

// maxCapacity is the passthrough mode's capacity: everyone is admitted and counted.
const maxCapacity = capacity.MaxCapacity

// refreshSeconds is how often a page without WebSocket polls (and the no-JS page
// reloads): often enough to keep the place alive well within queue_ttl.
func (s *Settings) refreshSeconds() int {
	d := s.QueueTTL / 12
	return int(min(max(d, 2*time.Second), 10*time.Second) / time.Second)
}

// RefreshSeconds is how often a waiter's page asks again, in seconds.
func (s *Settings) RefreshSeconds() int { return s.refreshSeconds() }

// heartbeatEvery is how often the hub hears of its connected waiters: well within
// queue_ttl, so a connected waiter never goes away.
func heartbeatEvery(queueTTL time.Duration) time.Duration {
	return min(queueTTL/3, 10*time.Second)
}
