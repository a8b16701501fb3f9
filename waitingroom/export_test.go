package waitingroom

import (
	"context"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/waitingroom/memorystore"
)

// Hooks for the external tests in this directory (package waitingroom_test), which may
// import the Redis store without an import cycle.

// TestClock is a clock a test moves by hand.
type TestClock = fakeClock

func NewTestClock(now time.Time) *TestClock { return &fakeClock{now: now} }

// SetClock makes h read time from c; call it before Provision.
func SetClock(h *Handler, c *TestClock) { h.clock = c }

// Tick runs one round of h's room loop (overrides, lottery, admission step, counters).
func Tick(h *Handler) { h.room.Tick(context.Background()) }

// StoreOf returns the store h runs on.
func StoreOf(h *Handler) queue.Store { return h.store }

// The package's tests keep the memory store in memory, as each test's rooms would
// otherwise restore the last test's state from Caddy's data directory; the tests of
// the state file set a directory of their own.
func init() { memorystore.Dir = func() string { return "" } }
