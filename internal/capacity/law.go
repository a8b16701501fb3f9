package capacity

import (
	"fmt"
	"math"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// The control law of the adaptive capacity. Each control period the room reads what
// the shop did with the visitors it let in (p90 time to first byte, failed share) and
// sets the next capacity:
//
//   - Over a target, it comes down at once, in proportion to the overshoot: to the
//     capacity times target/p90 (at most 0.8 of it, at least half), from the number
//     of visitors actually in when that is fewer, since they are what loaded the
//     shop. Too many failures take it to 0.7 of that.
//   - Within the targets, and only while capacity is what holds the line back (a
//     line waits and the room is full), it goes up by a share of the capacity that
//     shrinks as the p90 nears its target: a fifth of it when the shop is idle, a
//     twentieth at the edge.
//   - Otherwise it holds: with too few requests to read, with more visitors in than
//     the capacity (a lowering not yet in effect: admissions pause until enough have
//     left), or when something else limits admissions (no line, a rate, a mode).
//
// Why it settles: the shop's latency grows with the visitors in, so above the knee
// every period cuts and below it every period raises, each by less the nearer it is;
// the capacity ends in a narrow band just under the knee, where p90 meets the target.
// Holding while a lowering waits for visitors to leave keeps the law from cutting
// again for load it has already cut (the lag between capacity and load is the length
// of a session), and holding when capacity does not bind keeps it from climbing on
// an idle shop to a number never tested.

// Periods and thresholds of the law.
const (
	// ControlPeriod is how often the capacity is set, fleet-wide.
	ControlPeriod = 2 * time.Second
	// MinReading is the fewest requests a period needs to be read: fewer hold.
	MinReading = 20
	// minFailures is the fewest failed requests that can exceed the errors target:
	// one failure is never a trend.
	minFailures = 2
	// Cuts: at most to 0.8, at least to 0.5 of the capacity for latency; to 0.7 for
	// failures. A cut of at least a fifth leaves the law four or five raises below
	// the knee before it probes past it again, so about one period in six is over
	// the target where a mildest cut of 0.9 let one in three be (the simulated shop
	// of control_test.go).
	mildestCut, deepestCut, failureCut = 0.8, 0.5, 0.7
	// A period raises by raiseShare of the capacity times the headroom left under
	// the latency target, and by at least leastRaise of it: a shop far under its
	// knee answers as fast as one just under it, so the headroom alone would climb
	// too slowly to find a capacity that doubled.
	raiseShare, leastRaise = 0.2, 0.05
)

// Reading is what one control period measured, fleet-wide, and the room as it stood
// when the period was decided on.
type Reading struct {
	Requests, Failed uint64
	P90              time.Duration
	Active, Waiting  int
	// Limited says admissions were limited by something other than capacity (a
	// rate, a mode that holds or admits everyone).
	Limited bool
}

// ReadingOf is what sample says, with the room's counters st.
func ReadingOf(sample *queue.Sample, st *queue.Stats) Reading {
	return Reading{
		Requests: sample.Count(), Failed: sample.Failed, P90: sample.Percentile(0.9),
		Active: st.Active, Waiting: st.Waiting,
	}
}

// ErrorShare is the share of the period's requests that failed.
func (r Reading) ErrorShare() float64 {
	if r.Requests == 0 {
		return 0
	}
	return float64(r.Failed) / float64(r.Requests)
}

// Steer is the capacity the law sets after a period read as r, from capacity, with
// the reason the operator is shown.
func Steer(a Targets, capacity int, r Reading) (next int, reason string) {
	clamp := func(n int) int { return min(max(n, a.Min), a.Max) }
	capacity = clamp(capacity)
	if r.Requests < MinReading {
		return capacity, fmt.Sprintf("held: too few requests (%d)", r.Requests)
	}
	slow := r.P90 > a.Latency
	failing := r.Failed >= minFailures && r.ErrorShare() > a.Errors
	if slow || failing {
		if r.Active > capacity {
			return capacity, fmt.Sprintf("held: %d in above capacity %d, admissions paused until they leave", r.Active-capacity, capacity)
		}
		from := capacity
		if r.Active > 0 && r.Active < capacity {
			from = r.Active
		}
		cut := 1.0
		if slow {
			cut = min(max(float64(a.Latency)/float64(r.P90), deepestCut), mildestCut)
		}
		if failing {
			cut = min(cut, failureCut)
		}
		next = clamp(min(int(math.Floor(float64(from)*cut)), capacity-1))
		why := fmt.Sprintf("p90 %v > %v", RoundP90(r.P90), a.Latency)
		if !slow {
			why = fmt.Sprintf("errors %s > %s", ShownShare(r.ErrorShare()), FormatShare(a.Errors))
		} else if failing {
			why += fmt.Sprintf(", errors %s > %s", ShownShare(r.ErrorShare()), FormatShare(a.Errors))
		}
		if next == capacity {
			return capacity, "held at min: " + why
		}
		return next, "lowered: " + why
	}
	if r.Limited || r.Waiting == 0 || r.Active < capacity {
		return capacity, "held: capacity is not the limit"
	}
	headroom := 1 - float64(r.P90)/float64(a.Latency)
	share := max(raiseShare*headroom, leastRaise)
	next = clamp(capacity + max(1, int(math.Round(float64(capacity)*share))))
	if next == capacity {
		return capacity, "held at max: line waiting, targets met"
	}
	return next, "raised: line waiting, targets met"
}

// RoundP90 shows a p90 as a person reads it: to a millisecond (to a microsecond
// below one).
func RoundP90(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return d.Round(time.Millisecond)
}

// ShownShare is a measured share as the operator is shown it: to a tenth of a
// percent ("27.7%").
func ShownShare(f float64) string { return FormatShare(math.Round(f*1000) / 1000) }
