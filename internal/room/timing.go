package room

import "time"

// How often things happen in a running room. The waiting sockets' timing is
// internal/push/timing.go.
const (
	// StepEvery is the admission step's period; departures also trigger a step at once.
	// Exported for a caller that runs the room's loop itself on a clock of its own
	// (internal/rehearse), so that it steps as a running room does.
	StepEvery = 250 * time.Millisecond
	// storeErrorLogEvery rate-limits outage logs to one line per period per room.
	storeErrorLogEvery = 10 * time.Second
	// secretCheckEvery is how often a generated secret is offered to the store again:
	// every tick, so that a store which forgot it (Redis restarted empty) has it back
	// before a newly started instance can plant another. One SET NX per tick.
	secretCheckEvery = StepEvery
	// fleetEvery is how often the room states its format level in the store's fleet
	// record (fleet.go): one small script call per period, and what an upgrade waits
	// for at most, beside the lease's queue_ttl, before the fleet reads a new level.
	fleetEvery = 5 * time.Second
)

// What one instance gives out of hand-off codes, per room: a code is a QR code
// drawn, about 2 ms of CPU and 1.1 MB of garbage for a usual link, and under twice
// that for the longest one drawn whatever the address (page.MaxQRLink; go test -run
// '^$' -bench HandoffQR ./internal/page), hundreds of times what a poll costs, so a
// client asking as fast as it can would otherwise cost the instance hundreds of polls
// a request. 20 a second is about 4 % of a core, at most 8 %, and more than people
// switching devices ask for: 72,000 an hour per instance.
const (
	handoffsPerSecond = 20
	handoffBurst      = 50
)
