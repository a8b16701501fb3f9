package redisstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// onceScript: KEYS the once key; ARGV deadline (taken by the prelude), until (unix
// ms). The first offer sets the key to expire at until (SET NX PXAT: Redis forgets
// it then, by its own clock); every later offer, and any offer at or after until,
// answers 0. A script rather than the bare SET for the deadline prelude: a call
// Redis runs after its caller gave up would mark a proof used that the visitor was
// told had failed. Its one key is in the room's hash slot, so a Cluster routes it
// with the room.
var onceScript = redis.NewScript(deadlineCheck + `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local at = tonumber(ARGV[1])
if at <= now then return 0 end
if redis.call('SET', KEYS[1], '1', 'NX', 'PXAT', at) then return 1 end
return 0
`)

// onceKey is the room's key for key: waiting_room:{<room>}:once:<key>.
func (s *roomStore) onceKey(key string) string {
	return strings.TrimSuffix(s.keys[0], "queue") + "once:" + key
}

func (s *roomStore) Once(ctx context.Context, key string, until time.Time) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	callerDeadline, _ := ctx.Deadline()
	deadline, err := s.deadline(ctx, callerDeadline)
	if err != nil {
		return false, fmt.Errorf("once-only check: %w", err)
	}
	n, err := onceScript.Run(ctx, s.shared.client, []string{s.onceKey(key)}, deadline, until.UnixMilli()).Int64()
	if isDeadlineReply(err) {
		s.refreshClock()
	} else {
		s.shared.noteError(err)
	}
	if err != nil {
		return false, fmt.Errorf("once-only check: %w", err)
	}
	return n == 1, nil
}
