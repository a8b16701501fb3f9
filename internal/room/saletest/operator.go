package saletest

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
)

// revoke is the shop ending a session at checkout, through a random instance.
func (s *sale) revoke(who string, id queue.VisitorID) {
	i := s.rng.IntN(len(s.fleet))
	s.fleet[i].room.Revoke(s.ctx, id)
	s.trace.add(s.clock.Now(), "i%d shop revokes %s (%s)", i, who, id.String()[:8])
	s.watch.ended(s, id, fmt.Sprintf("revoked by i%d", i))
	s.watch.event(s, fmt.Sprintf("i%d revoke", i))
}

// operate is the operator at the console, now and then: a PATCH of capacity, rate,
// mode or a timing within its floor (or back to the configured value), a visitor
// removed, rarely a reset. A PATCH the room refuses (timings that contradict each
// other) changes nothing, as the admin API says.
func (s *sale) operate() {
	i := s.rng.IntN(len(s.fleet))
	rm := s.fleet[i].room
	var body map[string]any
	secs := func(d time.Duration) string { return d.String() }
	switch s.rng.IntN(12) {
	case 0, 1, 2:
		body = map[string]any{"capacity": 1 + s.rng.IntN(5)}
	case 3:
		body = map[string]any{"capacity": nil}
	case 4:
		body = map[string]any{"rate": map[string]any{"count": 1 + s.rng.IntN(3), "per": secs(time.Duration(1+s.rng.IntN(4)) * time.Second)}}
		if s.rng.IntN(2) == 0 {
			body = map[string]any{"rate": nil}
		}
	case 5:
		modes := []any{queue.ModeFIFO, queue.ModeQueueAll, queue.ModeRandom, queue.ModeReject, nil, nil}
		body = map[string]any{"mode": modes[s.rng.IntN(len(modes))]}
	case 6:
		body = map[string]any{"session_ttl": secs(settings.MinSessionTTL + time.Duration(s.rng.IntN(20))*time.Second)}
	case 7:
		body = map[string]any{"queue_ttl": secs(settings.MinQueueTTL + time.Duration(s.rng.IntN(10))*time.Second)}
	case 8:
		body = map[string]any{"away_ttl": secs(time.Duration(s.rng.IntN(60)) * time.Second), "session_max": nil}
	case 9:
		body = map[string]any{"session_max": secs(settings.MinSessionMax + time.Duration(s.rng.IntN(20))*time.Second)}
	case 10:
		body = map[string]any{"arrive_ttl": secs(settings.MinArriveTTL + time.Duration(s.rng.IntN(10))*time.Second)}
	default:
		if s.rng.IntN(4) == 0 {
			err := rm.Reset(s.ctx)
			s.trace.add(s.clock.Now(), "i%d operator resets the room: %v", i, err)
			s.watch.reset(s)
			s.watch.event(s, fmt.Sprintf("i%d reset", i))
			return
		}
		id, ok := s.watch.someAdmitted(s)
		if !ok {
			return
		}
		err := rm.RemoveVisitor(s.ctx, id.String())
		s.trace.add(s.clock.Now(), "i%d operator removes %s: %v", i, id.String()[:8], err)
		s.watch.ended(s, id, fmt.Sprintf("removed by i%d", i))
		s.watch.event(s, fmt.Sprintf("i%d remove", i))
		return
	}
	raw, _ := json.Marshal(body)
	_, err := rm.Patch(s.ctx, raw)
	result := "ok"
	if err != nil {
		result = err.Error()
	}
	s.trace.add(s.clock.Now(), "i%d operator PATCH %s: %s", i, raw, result)
	if c, ok := body["capacity"].(int); ok && err == nil {
		s.watch.patched = c
	}
	s.watch.event(s, fmt.Sprintf("i%d PATCH", i))
}
