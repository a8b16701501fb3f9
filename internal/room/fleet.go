package room

import (
	"context"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// The fleet record: the room states in the store, every fleetEvery, the format level
// this build reads (queue.FormatLevel), and learns the live instances and the lowest
// level among them. A release that writes a new format asks Fleet first, and goes on
// writing the old one while any live instance reads less (CONTRIBUTING, "Formats
// across versions"). An instance is live while it renews its record (within three
// periods); one of a release from before the record, while its lease is (the hub's,
// renewed within queue_ttl while it holds waiters' sockets).

// Fleet is the room's live instances and the format level all of them read, as the
// loop last recorded them: before the first record, this instance alone.
func (rm *Room) Fleet() queue.Fleet {
	if f := rm.fleet.Load(); f != nil {
		return *f
	}
	return queue.Fleet{Instances: 1, Reads: queue.FormatLevel}
}

// recordFleet records this instance in the fleet record, at most every fleetEvery.
func (rm *Room) recordFleet(ctx context.Context, now time.Time, queueTTL time.Duration) {
	if last := rm.fleetAt.Load(); last != 0 && now.UnixNano()-last < int64(fleetEvery) {
		return
	}
	rm.fleetAt.Store(now.UnixNano())
	f, err := rm.cfg.Store.Fleet(ctx, queue.FormatLevel, now, queue.FleetWindows{Record: 3 * fleetEvery, Lease: queueTTL})
	if err != nil {
		rm.storeError("recording the fleet", err)
		return
	}
	rm.fleet.Store(&f)
}

// FleetInfo is the admin API's fleet object (docs/admin-api.md).
type FleetInfo struct {
	// Instances counts the instances serving the room now, this one included.
	Instances int `json:"instances"`
	// Reads is the format level every one of them reads; below this instance's
	// FormatLevel while an older release is live.
	Reads int `json:"reads"`
	// Level is the format level this instance reads.
	Level int `json:"level"`
}
