// Package history is a room's last hour, a minute a point, as the operators' console
// charts it: the admissions per minute, the wait in line, the people in and waiting,
// the capacity in force and the shop's p90 against the adaptive capacity's target.
package history

import (
	"slices"
	"sync"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// The console's charts (admissions per minute, the wait in line) cover the last hour,
// and a console opened late must still show it: so the history is kept here, by the
// server, a minute a point. Admissions are the room's, fleet-wide (differences of the
// store's admitted_total); waits are those of the waiters this instance let in (the
// store keeps no waits), so on a fleet each instance charts its own share of them.
const (
	Step       = time.Minute
	pointsKept = 60
	// waitsKept bounds the waits a minute keeps for its quantiles; past it, a
	// uniform sample of them (reservoir) stands for the minute.
	waitsKept = 2048
)

// History is one room's last hour on this instance. The module keeps it across
// config reloads, as the memory store keeps its line: a reload on sale day must not
// blank the console's last hour.
type History struct {
	mu     sync.Mutex
	points []Point // closed minutes, oldest first, at most pointsKept
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
	// capacity is the capacity in force, target the adaptive capacity's p90 target
	// (0: off), at the last tick; shop is what this instance measured of the shop's
	// time to first byte in the minute.
	capacity int
	target   time.Duration
	shop     queue.Sample
}

// Point is one minute of the history, as the admin API gives it.
type Point struct {
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
	// Capacity is the capacity in force at the minute's end (its last tick).
	Capacity int `json:"capacity"`
	// ShopP90Seconds is the p90 of the shop's time to first byte for the admitted
	// requests this instance let through in the minute; null when there were none.
	// TargetSeconds is the adaptive capacity's p90 target, null while it is off.
	ShopP90Seconds *float64 `json:"shop_p90_seconds"`
	TargetSeconds  *float64 `json:"target_seconds"`
}

// New is an empty history.
func New() *History { return &History{rng: 0x9e3779b97f4a7c15} }

// Destruct lets go of the history when the last config with its room is gone.
func (hs *History) Destruct() error { return nil }

// Observe records the room's counters at now (each admission tick).
func (hs *History) Observe(now time.Time, st *queue.Stats) {
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

// Settings records the capacity in force and the p90 target (0: off) at now.
func (hs *History) Settings(now time.Time, capacity int, target time.Duration) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.roll(now)
	hs.cur.capacity, hs.cur.target = capacity, target
}

// Measured adds what this instance measured of the shop, taken at now.
func (hs *History) Measured(now time.Time, s *queue.Sample) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.roll(now)
	hs.cur.shop.Add(*s)
}

// Wait records that a waiter this instance let in had waited d.
func (hs *History) Wait(now time.Time, d time.Duration) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.roll(now)
	hs.seen++
	if len(hs.cur.waits) < waitsKept {
		hs.cur.waits = append(hs.cur.waits, d.Seconds())
		return
	}
	// Reservoir sampling: each wait of the minute is kept with the same chance.
	hs.rng ^= hs.rng << 13
	hs.rng ^= hs.rng >> 7
	hs.rng ^= hs.rng << 17
	if j := hs.rng % hs.seen; j < waitsKept {
		hs.cur.waits[j] = d.Seconds()
	}
}

// roll closes the minute in progress when now is past it. Called with hs.mu held.
func (hs *History) roll(now time.Time) {
	start := now.Truncate(Step)
	if hs.cur.start.Equal(start) {
		return
	}
	if !hs.cur.start.IsZero() && start.After(hs.cur.start) {
		hs.points = append(hs.points, hs.cur.point())
		if n := len(hs.points) - pointsKept; n > 0 {
			hs.points = slices.Delete(hs.points, 0, n)
		}
	}
	// The next minute starts from where this one ended, so no admission falls between.
	shop := hs.cur.shop
	clear(shop.Latency)
	hs.cur = minute{start: start, firstAdmitted: hs.cur.lastAdmitted, lastAdmitted: hs.cur.lastAdmitted,
		known: hs.cur.known, active: hs.cur.active, queued: hs.cur.queued, waits: hs.cur.waits[:0],
		capacity: hs.cur.capacity, target: hs.cur.target, shop: queue.Sample{Latency: shop.Latency}}
	hs.seen = 0
}

// point is the minute as a history point.
func (m *minute) point() Point {
	p := Point{At: m.start, Active: m.active, Waiting: m.queued, Waits: len(m.waits),
		Admissions: m.lastAdmitted - m.firstAdmitted, Capacity: m.capacity}
	if m.shop.Count() > 0 {
		p90 := m.shop.Percentile(0.9).Seconds()
		p.ShopP90Seconds = &p90
	}
	if m.target > 0 {
		t := m.target.Seconds()
		p.TargetSeconds = &t
	}
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

// Snapshot is the last hour up to now: the closed minutes and the one in progress.
func (hs *History) Snapshot(now time.Time) []Point {
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

// Info is the admin API's history object (docs/admin-api.md#history).
type Info struct {
	Room        string  `json:"room"`
	StepSeconds int     `json:"step_seconds"`
	Points      []Point `json:"points"`
}
