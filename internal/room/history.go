package room

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
	historyStep   = time.Minute
	historyPoints = 60
	// historyWaits bounds the waits a minute keeps for its quantiles; past it, a
	// uniform sample of them (reservoir) stands for the minute.
	historyWaits = 2048
)

// History is one room's last hour on this instance. The module keeps it across
// config reloads, as the memory store keeps its line: a reload on sale day must not
// blank the console's last hour.
type History struct {
	mu     sync.Mutex
	points []HistoryPoint // closed minutes, oldest first, at most historyPoints
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

// HistoryPoint is one minute of the history, as the admin API gives it.
type HistoryPoint struct {
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

// NewHistory is an empty history.
func NewHistory() *History { return &History{rng: 0x9e3779b97f4a7c15} }

// Destruct lets go of the history when the last config with its room is gone.
func (hs *History) Destruct() error { return nil }

// observe records the room's counters at now (each admission tick).
func (hs *History) observe(now time.Time, st *queue.Stats) {
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

// settings records the capacity in force and the p90 target (0: off) at now.
func (hs *History) settings(now time.Time, capacity int, target time.Duration) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.roll(now)
	hs.cur.capacity, hs.cur.target = capacity, target
}

// measured adds what this instance measured of the shop, taken at now.
func (hs *History) measured(now time.Time, s *queue.Sample) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.roll(now)
	hs.cur.shop.Add(*s)
}

// wait records that a waiter this instance let in had waited d.
func (hs *History) wait(now time.Time, d time.Duration) {
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
func (hs *History) roll(now time.Time) {
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
	shop := hs.cur.shop
	clear(shop.Latency)
	hs.cur = minute{start: start, firstAdmitted: hs.cur.lastAdmitted, lastAdmitted: hs.cur.lastAdmitted,
		known: hs.cur.known, active: hs.cur.active, queued: hs.cur.queued, waits: hs.cur.waits[:0],
		capacity: hs.cur.capacity, target: hs.cur.target, shop: queue.Sample{Latency: shop.Latency}}
	hs.seen = 0
}

// point is the minute as a history point.
func (m *minute) point() HistoryPoint {
	p := HistoryPoint{At: m.start, Active: m.active, Waiting: m.queued, Waits: len(m.waits),
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

// snapshot is the last hour up to now: the closed minutes and the one in progress.
func (hs *History) snapshot(now time.Time) []HistoryPoint {
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

// HistoryInfo is the admin API's history object (docs/admin-api.md#history).
type HistoryInfo struct {
	Room        string         `json:"room"`
	StepSeconds int            `json:"step_seconds"`
	Points      []HistoryPoint `json:"points"`
}

// History is the room's last hour on this instance, a point a minute, oldest first.
func (rm *Room) History() HistoryInfo {
	return HistoryInfo{
		Room:        rm.cfg.Name,
		StepSeconds: int(historyStep / time.Second),
		Points:      rm.cfg.History.snapshot(rm.cfg.Clock.Now()),
	}
}
