package settings

import (
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/capacity"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// A Snapshot is what a room runs with at one moment: the configuration, then the event
// in progress (or in its pre-queue), then the admin API's overrides, each winning over
// the one before. A Snapshot is never changed once made: the room makes a new one on
// each tick's read of the overrides, after each PATCH, and when an event's phase
// changes, and every request reads the current one with one atomic load.
type Snapshot struct {
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

// At makes the settings of cfg under the overrides o at now.
func At(cfg *Config, o Overrides, now time.Time) *Snapshot {
	s := &Snapshot{Runtime: cfg.Runtime, Overrides: o}
	if s.Mode == "" {
		s.Mode = queue.ModeFIFO
	}
	s.from, s.until = time.Time{}, time.Unix(1<<62, 0)
	for i := range cfg.Events {
		ev := &cfg.Events[i]
		switch {
		case now.Before(ev.Opens()):
			s.until = minTime(s.until, ev.Opens())
			continue
		case !now.Before(ev.End):
			s.from = maxTime(s.from, ev.End)
			continue
		}
		s.Event = ev
		if now.Before(ev.Start) {
			s.Prequeue = true
			s.from, s.until = ev.Opens(), ev.Start
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

// Holds reports whether nobody new is admitted (queue_all, or an event's pre-queue):
// the ETA is then unknowable.
func (s *Snapshot) Holds() bool { return s.Prequeue || s.Mode == queue.ModeQueueAll }

// StartsIn is how long until the event in its pre-queue starts.
func (s *Snapshot) StartsIn(now time.Time) time.Duration { return s.Event.Start.Sub(now) }

// Current reports whether s is still what the room runs with at now (overrides
// aside): now is within the event phase s was made in.
func (s *Snapshot) Current(now time.Time) bool { return !now.Before(s.from) && now.Before(s.until) }

// Limits are the store-facing settings.
func (s *Snapshot) Limits() queue.Limits {
	lim := queue.Limits{
		Capacity:   s.Capacity,
		SessionTTL: s.SessionTTL,
		QueueTTL:   s.QueueTTL,
		AwayTTL:    s.AwayTTL,
		SessionMax: s.SessionMax,
		ArriveTTL:  s.ArriveTTL,
	}
	if s.Rate.Limits() {
		lim.Rate, lim.RatePer = s.Rate.Count, s.Rate.Per
	}
	switch {
	case s.Holds(), s.Mode == queue.ModeSuspended:
		// Suspended: the loop still drops the expired, so the counts stay honest.
		lim.Hold = true
	case s.Mode == queue.ModeRandom:
		lim.Random = true
	case s.Mode == queue.ModePassthrough:
		lim.Capacity, lim.Rate, lim.RatePer = capacity.MaxCapacity, 0, 0 // everyone is admitted and counted
	case s.Mode == queue.ModeReject:
		lim.NoQueue = true
	}
	return lim
}

// RefreshSeconds is how often a page without WebSocket polls (and the no-JS page
// reloads), in seconds: often enough to keep the place alive well within queue_ttl.
func (s *Snapshot) RefreshSeconds() int {
	d := s.QueueTTL / 12
	return int(min(max(d, 2*time.Second), 10*time.Second) / time.Second)
}

// SessionOver reports whether the admitted session that began at since has reached
// session_max: decided from the cookie alone, so the admitted hot path makes no store
// call for it.
func (s *Snapshot) SessionOver(since, now time.Time) bool {
	return s.SessionMax > 0 && now.Sub(since) >= s.SessionMax
}
