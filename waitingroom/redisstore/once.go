package redisstore

import (
	"context"
	"fmt"
	"strings"
	"time"
)

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
		err = onceScript.locate(err)
	}
	if err != nil {
		return false, fmt.Errorf("once-only check: %w", err)
	}
	return n == 1, nil
}
