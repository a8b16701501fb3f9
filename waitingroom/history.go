package waitingroom

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// The console's charts (admissions per minute, the wait in line) cover the last hour,
// and a console opened late must still show it: so the history is kept here, by the
// server, a minute a point. Admissions are the room's, fleet-wide (differences of the
// store's admitted_total); waits are those of the waiters this instance let in (the
// store keeps no waits), so on a fleet each instance charts its own share of them.
const (
	historyStep   = time.Minute
	historyPoints = 60
	// historyWaits bounds the waits a minute keeps for its quantiles; past it, a
	// uniform sample of them (reservoir) stands for the minute.
	historyWaits = 2048
)

// histories keeps each room's history across config reloads, as the memory store keeps
// its line: a reload on sale day must not blank the console's last hour.
var histories = caddy.NewUsagePool()

// history is one room's last hour on this instance.
type history struct {
	mu     sync.Mutex
	points []historyPoint // closed minutes, oldest first, at most historyPoints
	cur    minute
	seen   uint64 // waits offered to cur (for the reservoir)
	rng    uint64
}

// minute is the minute being recorded.
type minute struct {
	start          time.Time
	firstAdmitted  uint64 // admitted_total when the minute began
	lastAdmitted   uint64
	known          bool // admitted_total read at least once in this minute
	active, queued int
	waits          []float64
}

// historyPoint is one minute of the history, as the admin API gives it.
type historyPoint struct {
	At time.Time `json:"at"`
	// Admissions are the room's admissions (every instance) in this minute: the
	// admissions per minute. For the minute in progress (Partial), those so far.
	Admissions uint64 `json:"admissions"`
	Partial    bool   `json:"partial,omitempty"`
	// WaitP50Seconds and WaitP90Seconds are quantiles of the waits of the waiters this
	// instance let in during the minute; null when it let none in from the line.
	WaitP50Seconds *float64 `json:"wait_p50_seconds"`
	WaitP90Seconds *float64 `json:"wait_p90_seconds"`
	Waits          int      `json:"waits"`
	Active         int      `json:"active"`
	Waiting        int      `json:"waiting"`
}

func loadHistory(room string) *history {
	v, _, _ := histories.LoadOrNew(room, func() (caddy.Destructor, error) { return &history{rng: 0x9e3779b97f4a7c15}, nil })
	return v.(*history)
}

func releaseHistory(room string) { _, _ = histories.Delete(room) }

// Destruct lets go of the history when the last config with its room is gone.
func (hs *history) Destruct() error { return nil }

// observe records the room's counters at now (each admission tick).
func (hs *history) observe(now time.Time, st *queue.Stats) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.roll(now)
	if !hs.cur.known || st.AdmittedTotal < hs.cur.lastAdmitted {
		// The first reading of the minute, or the counter started over (a reset
		// store): the minute counts from here.
		hs.cur.firstAdmitted, hs.cur.known = st.AdmittedTotal, true
	}
	hs.cur.lastAdmitted = st.AdmittedTotal
	hs.cur.active, hs.cur.queued = st.Active, st.Waiting
}

// wait records that a waiter this instance let in had waited d.
func (hs *history) wait(now time.Time, d time.Duration) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.roll(now)
	hs.seen++
	if len(hs.cur.waits) < historyWaits {
		hs.cur.waits = append(hs.cur.waits, d.Seconds())
		return
	}
	// Reservoir sampling: each wait of the minute is kept with the same chance.
	hs.rng ^= hs.rng << 13
	hs.rng ^= hs.rng >> 7
	hs.rng ^= hs.rng << 17
	if j := hs.rng % hs.seen; j < historyWaits {
		hs.cur.waits[j] = d.Seconds()
	}
}

// roll closes the minute in progress when now is past it. Called with hs.mu held.
func (hs *history) roll(now time.Time) {
	start := now.Truncate(historyStep)
	if hs.cur.start.Equal(start) {
		return
	}
	if !hs.cur.start.IsZero() && start.After(hs.cur.start) {
		hs.points = append(hs.points, hs.cur.point())
		if n := len(hs.points) - historyPoints; n > 0 {
			hs.points = slices.Delete(hs.points, 0, n)
		}
	}
	// The next minute starts from where this one ended, so no admission falls between.
	hs.cur = minute{start: start, firstAdmitted: hs.cur.lastAdmitted, lastAdmitted: hs.cur.lastAdmitted,
		known: hs.cur.known, active: hs.cur.active, queued: hs.cur.queued, waits: hs.cur.waits[:0]}
	hs.seen = 0
}

// point is the minute as a history point.
func (m *minute) point() historyPoint {
	p := historyPoint{At: m.start, Active: m.active, Waiting: m.queued, Waits: len(m.waits),
		Admissions: m.lastAdmitted - m.firstAdmitted}
	if len(m.waits) > 0 {
		w := slices.Clone(m.waits)
		slices.Sort(w)
		p50, p90 := quantile(w, 0.5), quantile(w, 0.9)
		p.WaitP50Seconds, p.WaitP90Seconds = &p50, &p90
	}
	return p
}

// quantile of sorted values, by the nearest rank.
func quantile(sorted []float64, q float64) float64 {
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// snapshot is the last hour up to now: the closed minutes and the one in progress.
func (hs *history) snapshot(now time.Time) []historyPoint {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.roll(now)
	out := slices.Clone(hs.points)
	if hs.cur.known {
		p := hs.cur.point()
		p.Partial = true
		out = append(out, p)
	}
	return out
}

// roomHistory is the admin API's history object (docs/admin-api.md#history).
type roomHistory struct {
	Room        string         `json:"room"`
	StepSeconds int            `json:"step_seconds"`
	Points      []historyPoint `json:"points"`
}

// History is the room's last hour on this instance, a point a minute, oldest first.
func (r control) History(ctx context.Context) (any, error) {
	return roomHistory{
		Room:        r.h.Name,
		StepSeconds: int(historyStep / time.Second),
		Points:      r.h.room.history.snapshot(r.h.clock.Now()),
	}, nil
}

// nextEvent is the first event whose queue opens after now, for the console's
// countdown; nil when none is scheduled.
func nextEvent(events []Event, now time.Time) *eventInfo {
	var next *Event
	for i := range events {
		ev := &events[i]
		if ev.opens().After(now) && (next == nil || ev.Start.Before(next.Start)) {
			next = ev
		}
	}
	if next == nil {
		return nil
	}
	s := ceilSeconds(next.Start.Sub(now))
	return &eventInfo{Start: next.Start, End: next.End, Phase: "scheduled", StartsInSeconds: &s, Shuffle: next.Shuffle}
}
