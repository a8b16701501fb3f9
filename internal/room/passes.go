package room

import (
	"context"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// The bounds of POST /waiting_room/<name>/passes (docs/admin-api.md).
const (
	maxPassCount = 1000
	maxPassTTL   = 30 * 24 * time.Hour
)

// MintPasses signs count passes of uses each, valid for ttl from now (to the second),
// with the room's current secret. They need nothing in the store until used.
func (rm *Room) MintPasses(_ context.Context, count int, ttl time.Duration, uses int) ([]string, time.Time, error) {
	switch {
	case count < 1 || count > maxPassCount:
		return nil, time.Time{}, inputErrorf("count must be 1 to %d, got %d", maxPassCount, count)
	case ttl < time.Second || ttl > maxPassTTL:
		return nil, time.Time{}, inputErrorf("ttl must be at least 1s and at most 720h (30 days), got %s", ttl)
	case uses < 1 || uses > token.MaxPassUses:
		return nil, time.Time{}, inputErrorf("uses must be 1 to %d, got %d", token.MaxPassUses, uses)
	}
	keys := rm.keys.Load()
	if keys == nil {
		return nil, time.Time{}, ErrNoSecret
	}
	expires := rm.cfg.Clock.Now().Add(ttl).Truncate(time.Second)
	passes := make([]string, count)
	for i := range passes {
		passes[i] = keys.MintPass(token.NewPass(expires, uses))
	}
	return passes, expires, nil
}
