package room

import (
	"context"
	"encoding/json"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/capacity"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
)

// steer runs the room's part of the fleet's adaptive capacity (capacity.Steering) at
// one tick under s, with the counters st just read, and saves a decision it made.
func (rm *Room) steer(ctx context.Context, now time.Time, s *settings.Snapshot, st *queue.Stats) {
	took := func(all *queue.Sample, total time.Duration) {
		rm.cfg.Metrics.Measured(all, total)
		rm.cfg.History.Measured(now, all)
	}
	in := capacity.Room{Targets: s.Adapt, Capacity: s.Capacity, Limited: limitedOtherwise(s), Stats: st}
	d, decided := rm.steering.Step(ctx, now, rm.cfg.Store, in, took, rm.storeError)
	if !decided {
		return
	}
	if err := rm.saveAdapted(ctx, s.Capacity, d); err != nil {
		rm.storeError("saving the adapted capacity", err)
		return
	}
	if d.Capacity != s.Capacity {
		rm.cfg.Logger.Info("capacity adapted", zap.String("room", rm.cfg.Name), zap.Int("from", s.Capacity),
			zap.Int("to", d.Capacity), zap.String("reason", d.Reason))
	}
}

// Served records what the shop did with one request of visitor id's that the room
// let through: how long from when the shop had the whole request to the response's
// header (ttfb), and whether it failed (a 5xx, or an error from the handler).
// Requests the room answered itself are not served, nor are those the shop is not
// the one to answer for (the caller leaves out a visitor who went away, a body
// that could not be read).
func (rm *Room) Served(id queue.VisitorID, ttfb time.Duration, failed bool) {
	rm.steering.Meter.Add(id, ttfb, failed)
}

// limitedOtherwise says something other than capacity limits admissions under s: a
// rate, or a mode that holds everyone or admits everyone.
func limitedOtherwise(s *settings.Snapshot) bool {
	lim := s.Limits()
	return lim.Hold || lim.Rate > 0 || lim.Capacity == capacity.MaxCapacity
}

// saveAdapted saves the controller's decision d beside the runtime settings, unless
// the capacity it was made from (from) is no longer the one in force, or adapt was
// turned off: an operator's change made meanwhile wins, and the next period decides
// from it.
func (rm *Room) saveAdapted(ctx context.Context, from int, d capacity.Decision) error {
	saved, wrote, err := rm.changeOverrides(ctx, func(was settings.Overrides, doc map[string]json.RawMessage) (bool, error) {
		s := settings.At(&rm.cfg.Config, was, rm.cfg.Clock.Now())
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
