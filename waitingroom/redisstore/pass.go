package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// The pass lane. A busy period (from a ticket issued into an empty queue until the
// queue is empty again) reserves its first PASS_LANE offsets for pass holders: the
// first ordinary waiter's ticket is base + PASS_LANE, and pass holders take base + 0,
// base + 1, ... in arrival order (meta's lane_next). Their tickets are below every
// ordinary one, so everything that counts the live bitmap from its start (positions,
// Step's head, AdmitNow) puts them first with no change, and every other part of the
// queue (liveness, away, holders, leases) treats them like anyone. Random mode and the
// event lottery leave the lane in its order. The reservation costs a room about 85 KiB
// of Redis memory while anyone waits (MEMORY USAGE with one waiter: 80 KiB of heard
// times, 2.6 KiB each of live and held), not per waiter.
//
// Past PASS_LANE pass holders in one busy period, a pass holder is queued at the back of
// the ordinary line (the pass still counts one use). Each pass's uses are one counter,
// waiting_room:{<room>}:pass:<id>, in the room's slot, expiring with the pass.
// lua/pass_join.lua is the join; PASS_LANE is set in lua/prelude.lua.

func (s *roomStore) JoinPass(ctx context.Context, id queue.VisitorID, pass queue.PassUse, now time.Time, lim queue.Limits) (queue.Status, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	callerDeadline, _ := ctx.Deadline()
	deadline, err := s.deadline(ctx, callerDeadline)
	if err != nil {
		return queue.Status{}, false, fmt.Errorf("joining with a pass: %w", err)
	}
	keys := append(s.keys[:len(s.keys):len(s.keys)], s.key("pass:"+pass.ID), s.admissionsKey(now))
	cmd := passJoinScript.Run(ctx, s.shared.client, keys, deadline, id[:], now.UnixMilli(),
		lim.Capacity, lim.SessionTTL.Milliseconds(), lim.Rate, lim.RatePer.Milliseconds(),
		flag(lim.Hold), flag(lim.NoQueue), pass.Uses, pass.Expires.UnixMilli(), flag(lim.Reasons))
	if err := cmd.Err(); isDeadlineReply(err) {
		s.refreshClock()
	} else {
		s.shared.noteError(err)
		if err != nil {
			cmd.SetErr(passJoinScript.locate(err))
		}
	}
	res, err := cmd.Int64Slice()
	if err != nil {
		return queue.Status{}, false, fmt.Errorf("joining with a pass: %w", err)
	}
	if len(res) != statusReply+1 {
		return queue.Status{}, false, fmt.Errorf("joining with a pass: unexpected reply %v", res)
	}
	if res[statusReply] == 0 {
		return queue.Status{}, false, nil
	}
	st, err := toStatus(res[:statusReply])
	return st, true, err
}
