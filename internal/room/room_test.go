package room

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
)

// testSecret is a secret of the least length a room takes.
var testSecret = []byte("0123456789abcdef0123456789abcdef")

// testClock is a clock the test moves.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// noMetrics counts nothing.
type noMetrics struct{}

func (noMetrics) Admitted(int)                          {}
func (noMetrics) Queued()                               {}
func (noMetrics) Abandoned(int)                         {}
func (noMetrics) Waited(time.Duration)                  {}
func (noMetrics) Counters(*queue.Stats, int)            {}
func (noMetrics) Measured(*queue.Sample, time.Duration) {}
func (noMetrics) LatencyTarget(time.Duration)           {}
func (noMetrics) NoShows(int)                           {}
func (noMetrics) Handoff()                              {}
func (noMetrics) AdmittedBy(queue.ByReason)             {}

// newTestRoom starts a room of capacity on a memory store, with a clock the test
// moves; configure may change the configuration before the room is made.
func newTestRoom(t *testing.T, capacity int, configure func(*Config)) (*Room, *testClock) {
	t.Helper()
	cfg, clk := testConfig(capacity, configure)
	rm := New(cfg)
	rm.Start(context.Background())
	t.Cleanup(rm.Stop)
	return rm, clk
}

// testConfig is newTestRoom's configuration, for a room the test does not start.
func testConfig(capacity int, configure func(*Config)) (*Config, *testClock) {
	clk := &testClock{now: time.Unix(1_800_000_000, 0)}
	cfg := &Config{
		Name:    "test",
		Config:  settings.Config{Runtime: settings.Runtime{Capacity: capacity, SessionTTL: time.Minute, QueueTTL: 30 * time.Second}},
		Secrets: [][]byte{testSecret},
		Store:   queue.NewMemoryStore(),
		Clock:   clk,
		Metrics: noMetrics{},
	}
	if configure != nil {
		configure(cfg)
	}
	return cfg, clk
}
