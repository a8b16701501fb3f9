package room

import "time"

// How often things happen in a running room. The waiting sockets' timing is
// internal/push/timing.go.
const (
	// stepEvery is the admission step's period; departures also trigger a step at once.
	stepEvery = 250 * time.Millisecond
	// storeErrorLogEvery rate-limits outage logs to one line per period per room.
	storeErrorLogEvery = 10 * time.Second
	// secretCheckEvery is how often a generated secret is offered to the store again:
	// every tick, so that a store which forgot it (Redis restarted empty) has it back
	// before a newly started instance can plant another. One SET NX per tick.
	secretCheckEvery = stepEvery
)
