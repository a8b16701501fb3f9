package room

import (
	"context"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
	"go.uber.org/zap"
)

// drawLots runs the lottery of an event that has started, once per event: the first
// instance to get here shuffles the queue in the store, the others (and later calls
// here) find it drawn. It is called before any join or admission step at or after the
// start, so every later arrival queues behind the drawn waiters.
func (rm *Room) drawLots(ctx context.Context, s *settings.Snapshot) {
	if s.Event == nil || s.Prequeue || !s.Event.Shuffle {
		return
	}
	key := s.Event.Key()
	if _, done := rm.drawn.Load(key); done {
		return
	}
	shuffled, err := rm.cfg.Store.Shuffle(ctx, key)
	if err != nil {
		rm.storeError("drawing lots", err)
		return
	}
	rm.drawn.Store(key, true)
	if shuffled {
		rm.cfg.Logger.Info("event started: queue shuffled", zap.String("room", rm.cfg.Name), zap.String("event", key))
	}
}
