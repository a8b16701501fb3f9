package redisstore

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// A place moved to another device (queue.Store.Move, lua/move.lua) is re-keyed in the
// room's sets, and the id that gave it away is marked with a key of its own,
// waiting_room:{<room>}:moved:<hex id>, in the room's slot, that Redis expires at the
// end of the keep: nothing sweeps the marks, and a room costs nothing for them while
// nobody moves. A mark holds the count of the room's resets when it was made, and
// counts only while that count stands: a reset, which cannot find the marks, ends
// them all by counting one more. status.lua reads the mark only for an id it does not otherwise know,
// so a known visitor's status costs nothing more. meta's handoffs counts the moves,
// and the ids that moved away are published on waiting_room:{<room>}:moved, as the
// admitted ones are on :admitted (queue.MoveAnnouncer).

var _ queue.MoveAnnouncer = (*roomStore)(nil)

// movedChannel is where the room's moves are announced.
func (s *roomStore) movedChannel() string {
	return strings.TrimSuffix(s.keys[0], "queue") + "moved"
}

func (s *roomStore) SubscribeMoved(fn func(ids []queue.VisitorID)) (cancel func()) {
	return s.shared.subscribe(s.movedChannel(), s.timeout, fn)
}

// movedKey is id's mark.
func (s *roomStore) movedKey(id queue.VisitorID) string {
	return strings.TrimSuffix(s.keys[0], "queue") + "moved:" + hex.EncodeToString(id[:])
}

// withMark is the room's keys and id's mark: the keys of status.lua and move.lua.
func (s *roomStore) withMark(id queue.VisitorID) []string {
	return append(s.keys[:len(s.keys):len(s.keys)], s.movedKey(id))
}

// runKeys calls script on keys within the store's timeout, as run does on the
// room's keys.
func (s *roomStore) runKeys(ctx context.Context, keys []string, script *luaScript, args ...any) *redis.Cmd {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	callerDeadline, _ := ctx.Deadline()
	deadline, err := s.deadline(ctx, callerDeadline)
	if err != nil {
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(err)
		return cmd
	}
	cmd := script.Run(ctx, s.shared.client, keys, append([]any{deadline}, args...)...)
	if err := cmd.Err(); isDeadlineReply(err) {
		s.refreshClock()
	} else {
		s.shared.noteError(err)
		if err != nil {
			cmd.SetErr(script.locate(err))
		}
	}
	return cmd
}

func (s *roomStore) Move(ctx context.Context, from, to queue.VisitorID, now time.Time, lim queue.Limits) (queue.Status, bool, error) {
	keys := append(s.withMark(from), s.admissionsKey(now))
	res, err := s.runKeys(ctx, keys, moveScript, from[:], to[:], now.UnixMilli(),
		lim.MovedKeep().Milliseconds(), s.movedChannel(), flag(lim.Reasons)).Int64Slice()
	if err != nil {
		return queue.Status{}, false, fmt.Errorf("moving a place: %w", err)
	}
	st, err := toStatus(res)
	if err != nil {
		return queue.Status{}, false, fmt.Errorf("moving a place: %w", err)
	}
	return st, st.State != queue.Unknown, nil
}
