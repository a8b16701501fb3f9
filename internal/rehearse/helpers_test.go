package rehearse

import (
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
)

// configFor is a room of the given capacity with the module's defaults, as
// Provision fills them in.
func configFor(capacity int) room.Config {
	return room.Config{Config: settings.Config{Runtime: settings.Runtime{Capacity: capacity, Mode: "fifo", SessionTTL: 5 * time.Minute,
		QueueTTL: time.Minute, AwayTTL: 10 * time.Minute, ArriveTTL: 30 * time.Second}}}
}
