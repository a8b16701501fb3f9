package settings

import (
	"fmt"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// The least each setting may be. Below these a setting parses, and the room runs, but
// cannot do what the setting says. The Caddyfile, Validate and the admin API's PATCH
// all refuse them with atLeast's message.
const (
	// MinQueueTTL outlasts two polls of a page without a socket (every 2 s at the
	// fastest, up to 2.2 s with its jitter: refreshSeconds), so one late poll does not
	// send a waiter away; a socket's heartbeat is queue_ttl/3. Below a poll, nobody
	// who polls is ever present, and with a free slot nobody is admitted.
	MinQueueTTL = 5 * time.Second

	// MinSessionTTL outlasts two of an instance's store confirmations of an admitted
	// visitor (one per queue.TouchEvery at most): below it, a visitor who keeps
	// clicking loses the slot between two confirmations.
	MinSessionTTL = 2 * queue.TouchEvery

	// MinSessionMax is a session that can hold a page or two; it is bounded by the
	// same confirmations as session_ttl, so other instances learn of its end in time.
	MinSessionMax = MinSessionTTL

	// MinArriveTTL is the least time an admitted waiter has to arrive: the admission
	// reaches a connected page within a second, and the page's navigation follows.
	// CheckArrive also holds it above two polls of a page without a socket.
	MinArriveTTL = 5 * time.Second

	// MinWindow bounds a rate's window and the per-address join window: admissions
	// are decided every room.StepEvery, and a window much below a second cannot be kept as
	// written (a rate of 1 per 100ms admits at the step's pace, not ten a second).
	MinWindow = time.Second
)

// AtLeast refuses d below floor, saying both.
func AtLeast(name string, d, floor time.Duration) error {
	if d < floor {
		return fmt.Errorf("%s must be at least %v, got %v", name, floor, d)
	}
	return nil
}

// CheckArrive refuses an arrive_ttl that would send back waiters who do arrive: a
// page without a socket learns of its admission at its next poll (every
// RefreshSeconds, from queue_ttl, give or take a tenth), so arrive_ttl must outlast
// two of them. 0 is off.
func CheckArrive(queueTTL, arriveTTL time.Duration) error {
	if arriveTTL == 0 {
		return nil
	}
	if floor := ArriveFloor(queueTTL); arriveTTL < floor {
		return fmt.Errorf("arrive_ttl (%v) must be 0 or at least %v: two polls of a waiting page without a socket, with queue_ttl %v",
			arriveTTL, floor, queueTTL)
	}
	return nil
}

// ArriveFloor is the least arrive_ttl under queueTTL (see CheckArrive).
func ArriveFloor(queueTTL time.Duration) time.Duration {
	poll := time.Duration((&Snapshot{Runtime: Runtime{QueueTTL: queueTTL}}).RefreshSeconds()) * time.Second
	return max(MinArriveTTL, poll*2*11/10)
}
