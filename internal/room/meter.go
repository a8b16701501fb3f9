package room

import (
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// Served records what the shop did with one request of visitor id's that the room
// let through: how long from when the shop had the whole request to the response's
// header (ttfb), and whether it failed (a 5xx, or an error from the handler).
// Requests the room answered itself are not served, nor are those the shop is not
// the one to answer for (the caller leaves out a visitor who went away, a body
// that could not be read).
func (rm *Room) Served(id queue.VisitorID, ttfb time.Duration, failed bool) {
	rm.meter.Add(id, ttfb, failed)
}
