package room

import (
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
)

// Every request reads one snapshot; it is made anew when the time leaves the event
// phase it was made in (before the queue opens, the pre-queue, the event, after it),
// and not on each request within a phase.
func TestSettingsFollowTheEventPhase(t *testing.T) {
	base := time.Unix(1_800_000_000, 0)
	start, end := base.Add(time.Hour), base.Add(2*time.Hour)
	cfg, _ := testConfig(5, func(c *Config) {
		c.Events = []settings.Event{{Start: start, End: end, Prequeue: 10 * time.Minute, Capacity: 50}}
	})
	rm := New(cfg) // not started: no tick makes a snapshot behind the test's back
	for _, tc := range []struct {
		at       time.Time
		capacity int
		event    bool
		prequeue bool
	}{
		{base, 5, false, false},
		{start.Add(-10 * time.Minute), 5, true, true},
		{start.Add(-time.Second), 5, true, true},
		{start, 50, true, false},
		{end.Add(-time.Nanosecond), 50, true, false},
		{end, 5, false, false},
	} {
		s := rm.Settings(tc.at)
		if s.Capacity != tc.capacity || (s.Event != nil) != tc.event || s.Prequeue != tc.prequeue {
			t.Errorf("at %v: capacity %d, event %v, prequeue %v; want %d, %v, %v",
				tc.at.Sub(base), s.Capacity, s.Event != nil, s.Prequeue, tc.capacity, tc.event, tc.prequeue)
		}
		if again := rm.Settings(tc.at); again != s {
			t.Errorf("at %v: a second request in the phase got a new snapshot", tc.at.Sub(base))
		}
	}
}
