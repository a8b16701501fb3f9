package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// fleetKey is the room's record of the format level each live instance reads.
func (s *roomStore) fleetKey() string { return s.keys[10][:len(s.keys[10])-len("leases")] + "fleet" }

func (s *roomStore) Fleet(ctx context.Context, reads int, now time.Time, live queue.FleetWindows) (queue.Fleet, error) {
	// Without a slot yet, the script claims one: the slot's lease and its record are
	// written in one call (fleet.lua says why), under the lock holderSlot takes.
	slot := s.slot.Load()
	if slot == 0 {
		s.slotMu.Lock()
		defer s.slotMu.Unlock()
		slot = s.slot.Load()
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	callerDeadline, _ := ctx.Deadline()
	deadline, err := s.deadline(ctx, callerDeadline)
	if err != nil {
		return queue.Fleet{}, fmt.Errorf("recording the fleet: %w", err)
	}
	res, err := fleetScript.Run(ctx, s.shared.client, []string{s.keys[10], s.fleetKey(), s.keys[2]}, deadline,
		now.UnixMilli(), strconv.FormatUint(uint64(slot), 10), reads, live.Record.Milliseconds(), live.Lease.Milliseconds()).Int64Slice()
	if isDeadlineReply(err) {
		s.refreshClock()
	} else {
		s.shared.noteError(err)
		err = fleetScript.locate(err)
	}
	if err != nil {
		return queue.Fleet{}, fmt.Errorf("recording the fleet: %w", err)
	}
	if len(res) != 3 || res[2] < 1 || res[2] > 65535 {
		return queue.Fleet{}, fmt.Errorf("recording the fleet: unexpected reply %v", res)
	}
	if slot == 0 {
		s.slot.Store(uint32(res[2]))
	}
	return queue.Fleet{Instances: int(res[0]), Reads: int(res[1])}, nil
}
