package room

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/capacity"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// The adaptive capacity across a fleet. Control periods are numbered from the Unix
// epoch, so every instance sharing a store agrees on them. At its first tick in a
// period each instance reports what it measured in the one before (Store.Report);
// a moment later (reportGrace, so the others have reported too) the first instance
// to claim the period (Store.Once) reads everyone's sample, decides by the control
// law (internal/capacity), and saves the capacity it chose, with why, beside the runtime
// settings, which every instance reads each tick. The law and the measuring are
// internal/capacity's; this is the fleet's part of it. An instance that dies simply
// claims no more periods; the next period's claim goes to another.

// reportGrace is how long after a period ends its decision waits for the reports.
const reportGrace = 2 * stepEvery

// steering is the room's part in the fleet's adaptive capacity, kept by the loop.
type steering struct {
	reported int64 // the period this instance's meter is measuring into
	decided  int64 // the last period this instance decided or left to another
}

// steer runs the room's part of the adaptive capacity at one tick under s, with the
// counters st just read.
func (rm *Room) steer(ctx context.Context, now time.Time, s *Settings, st *queue.Stats) {
	rm.steerMu.Lock()
	defer rm.steerMu.Unlock()
	sg := &rm.steering
	period := capacity.PeriodOf(now)
	if period != sg.reported {
		// The metrics and the history show every request the shop answered; the
		// control law reads each visitor's first requests of the period (capacity.Meter).
		sample, all, total := rm.meter.Take()
		rm.cfg.Metrics.Measured(&all, total)
		rm.cfg.History.measured(now, &all)
		// A sample taken across more than one period (the loop stalled, the store was
		// down) says nothing of any one of them: it is dropped. The report is a
		// sample as before (the previous release reads it): only what it counts is new.
		if s.Adapt != nil && sg.reported == period-1 {
			if err := rm.cfg.Store.Report(ctx, sg.reported, sample); err != nil {
				rm.storeError("reporting measurements", err)
			}
		}
		sg.reported = period
	}
	last := period - 1
	if s.Adapt == nil || sg.decided >= last || now.Before(capacity.PeriodStart(period).Add(reportGrace)) {
		return
	}
	sg.decided = last
	mine, err := rm.cfg.Store.Once(ctx, "adapt:"+strconv.FormatInt(last, 10), capacity.PeriodStart(period).Add(time.Minute))
	if err != nil {
		rm.storeError("claiming a control period", err)
		return
	}
	if !mine {
		return // another instance decides this one
	}
	sample, err := rm.cfg.Store.Measured(ctx, last)
	if err != nil {
		rm.storeError("reading measurements", err)
		return
	}
	r := capacity.ReadingOf(&sample, st)
	r.Limited = s.limitedOtherwise()
	next, reason := capacity.Steer(*s.Adapt, s.Capacity, r)
	d := capacity.NewDecision(last, r, next, reason)
	if err := rm.saveAdapted(ctx, s.Capacity, d); err != nil {
		rm.storeError("saving the adapted capacity", err)
		return
	}
	if next != s.Capacity {
		rm.cfg.Logger.Info("capacity adapted", zap.String("room", rm.cfg.Name), zap.Int("from", s.Capacity),
			zap.Int("to", next), zap.String("reason", reason))
	}
}

// limitedOtherwise says something other than capacity limits admissions under s: a
// rate, or a mode that holds everyone or admits everyone.
func (s *Settings) limitedOtherwise() bool {
	lim := s.limits()
	return lim.Hold || lim.Rate > 0 || lim.Capacity == maxCapacity
}

// saveAdapted saves the controller's decision d beside the runtime settings, unless
// the capacity it was made from (from) is no longer the one in force, or adapt was
// turned off: an operator's change made meanwhile wins, and the next period decides
// from it.
func (rm *Room) saveAdapted(ctx context.Context, from int, d capacity.Decision) error {
	saved, wrote, err := rm.changeOverrides(ctx, func(was Overrides, doc map[string]json.RawMessage) (bool, error) {
		s := settingsAt(rm.cfg, was, rm.cfg.Clock.Now())
		if s.Adapt == nil || s.Capacity != from {
			return false, nil
		}
		doc["adapted"], _ = json.Marshal(d)
		return true, nil
	})
	if wrote {
		rm.settle(saved)
	}
	return err
}
