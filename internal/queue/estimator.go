package queue

import (
	"math"
	"sync"
	"time"
)

// Estimator measures the room's admission throughput over a sliding window and turns a
// position into a wait: ETA = position / (admissions per second). That is honest about
// parallel capacity (with capacity 200, two hundred people are served at once; position
// x average session would be two hundred times too long), and because it samples the
// store's room-wide admission counter, on a fleet every instance measures the whole
// fleet's throughput, not its own share.
type Estimator struct {
	mu      sync.Mutex
	window  time.Duration
	samples []rateSample // oldest first, at most one per sampleEvery
}

type rateSample struct {
	at    time.Time
	total uint64
}

const (
	estimatorWindow = 3 * time.Minute
	sampleEvery     = time.Second
	// minAdmissions and minSpan are how much evidence an estimate needs; before that the
	// page says "estimating" rather than invent a number.
	minAdmissions = 3
	minSpan       = 5 * time.Second
)

// NewEstimator returns an Estimator with no evidence yet, measuring over the last three
// minutes.
func NewEstimator() *Estimator { return &Estimator{window: estimatorWindow} }

// Observe records the room's admitted-total counter at time now, at most once per
// sampleEvery.
func (e *Estimator) Observe(now time.Time, total uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n := len(e.samples); n > 0 {
		last := e.samples[n-1]
		if total < last.total {
			// The counter went back (the store was reset): old evidence is void.
			e.samples = e.samples[:0]
		} else if now.Sub(last.at) < sampleEvery {
			return
		}
	}
	cut := 0
	for cut < len(e.samples)-1 && now.Sub(e.samples[cut+1].at) >= e.window {
		cut++
	}
	e.samples = append(e.samples[cut:], rateSample{at: now, total: total})
}

// saved is a copy of the evidence, oldest first, for the memory store's state file
// (the memory store keeps the room's estimator, so a reload and a restart keep its
// evidence and the ETA it gives).
func (e *Estimator) saved() []rateSample {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]rateSample(nil), e.samples...)
}

// Rate is the admissions per second over the window, and whether there is enough
// evidence to say.
func (e *Estimator) Rate() (float64, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.samples) < 2 {
		return 0, false
	}
	first, last := e.samples[0], e.samples[len(e.samples)-1]
	span := last.at.Sub(first.at)
	admitted := last.total - first.total
	if admitted < minAdmissions || span < minSpan {
		return 0, false
	}
	return float64(admitted) / span.Seconds(), true
}

// ETA is the wait at position when admissions run at rate per second, rounded up to a
// second.
func ETA(position int, rate float64) time.Duration {
	return time.Duration(math.Ceil(float64(position)/rate)) * time.Second
}
