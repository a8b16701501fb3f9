package capacity

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// The adaptive capacity across a fleet. Control periods are numbered from the Unix
// epoch, so every instance sharing a store agrees on them. At its first tick in a
// period each instance reports what it measured in the one before (Exchange.Report);
// a moment later (ReportGrace, so the others have reported too) the first instance
// to claim the period (Exchange.Once) reads everyone's sample, decides by the control
// law (Steer), and the room saves the capacity it chose, with why, beside its runtime
// settings, which every instance reads each tick. An instance that dies simply claims
// no more periods; the next period's claim goes to another.

// ReportGrace is how long after a period ends its decision waits for the reports:
// two of the room's admission ticks.
const ReportGrace = 500 * time.Millisecond

// Exchange is what the fleet's steering needs of the room's store (queue.Store has
// it): where each instance reports a period's sample, claims the period's decision,
// and reads what the fleet reported.
type Exchange interface {
	Report(ctx context.Context, period int64, s queue.Sample) error
	Once(ctx context.Context, key string, until time.Time) (bool, error)
	Measured(ctx context.Context, period int64) (queue.Sample, error)
}

// Steering is one instance's part in the fleet's adaptive capacity: its Meter of
// the shop, and the periods it reported and decided. A room's loop and its admin
// calls both step it, hence the lock.
type Steering struct {
	Meter Meter

	mu       sync.Mutex
	reported int64 // the period the meter is measuring into
	decided  int64 // the last period this instance decided or left to another
}

// Room is what the steering reads of the room at one tick: the targets in force
// (nil: adapt is off), the capacity in force, whether something other than capacity
// limits admissions (a rate, a mode that holds or admits everyone), and the
// counters just read.
type Room struct {
	Targets  *Targets
	Capacity int
	Limited  bool
	Stats    *queue.Stats
}

// Step runs this instance's part at one tick at now. Each new period, the meter's
// sample is taken: all of it goes to took (the metrics, the console), and, while
// adapt is on, the part the law reads is reported. When this instance claims the
// period just past, Step returns the law's decision for it (decided); the caller
// saves it. A store call that fails is told to failed with what it was doing.
func (sg *Steering) Step(ctx context.Context, now time.Time, store Exchange, rm Room,
	took func(all *queue.Sample, total time.Duration), failed func(op string, err error)) (d Decision, decided bool) {
	sg.mu.Lock()
	defer sg.mu.Unlock()
	period := PeriodOf(now)
	if period != sg.reported {
		// The metrics and the console show every request the shop answered; the law
		// reads each visitor's first requests of the period (Meter).
		sample, all, total := sg.Meter.Take()
		took(&all, total)
		// A sample taken across more than one period (the loop stalled, the store was
		// down) says nothing of any one of them: it is dropped.
		if rm.Targets != nil && sg.reported == period-1 {
			if err := store.Report(ctx, sg.reported, sample); err != nil {
				failed("reporting measurements", err)
			}
		}
		sg.reported = period
	}
	last := period - 1
	if rm.Targets == nil || sg.decided >= last || now.Before(PeriodStart(period).Add(ReportGrace)) {
		return Decision{}, false
	}
	sg.decided = last
	mine, err := store.Once(ctx, "adapt:"+strconv.FormatInt(last, 10), PeriodStart(period).Add(time.Minute))
	if err != nil {
		failed("claiming a control period", err)
		return Decision{}, false
	}
	if !mine {
		return Decision{}, false // another instance decides this one
	}
	sample, err := store.Measured(ctx, last)
	if err != nil {
		failed("reading measurements", err)
		return Decision{}, false
	}
	r := ReadingOf(&sample, rm.Stats)
	r.Limited = rm.Limited
	next, reason := Steer(*rm.Targets, rm.Capacity, r)
	return NewDecision(last, r, next, reason), true
}
