package caddytest

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// What many tests assert with: waits bounded by generous liveness deadlines (a bound
// on a hang, never a timing assertion), and the failures and counts that a test's
// goroutines collect for it to check at the end.

// missingTool is the project's rule for a tool the tests need and the machine
// lacks: a loud skip, and a failure when CI is set, so a CI run never passes by
// skipping.
func missingTool(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Log("!!!!!!!! " + msg)
	t.Skip(msg)
}

// liveness bounds how long a test waits for something the page must do; it is a
// bound on a hang, not a timing assertion.
const liveness = 15 * time.Second

// browserStart bounds how long a browser may take to start and open its session: a
// cold profile on a shared machine, with the race detector and other browsers busy,
// has taken more than liveness. It too bounds a hang and asserts no timing.
const browserStart = 4 * liveness

// eventually polls cond until it holds, failing after the liveness bound with
// what cond last saw.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(liveness)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s; last saw %s", liveness, what, seen)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// Liveness deadlines: generous bounds on things that should take milliseconds, so a
// loaded CI machine is slow, not failing. They are never the assertion.
const (
	startDeadline = 60 * time.Second
	eventDeadline = 30 * time.Second
)

// waitFor polls cond until it holds or the liveness deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > eventDeadline {
			t.Fatalf("gave up waiting for %s after %v", what, eventDeadline)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// failureLog collects what went wrong in a test's goroutines: every failure is counted,
// the first 20 are kept to report.
type failureLog struct {
	mu   sync.Mutex
	msgs []string
	n    atomic.Int64
}

func (f *failureLog) add(format string, args ...any) {
	f.n.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.msgs) < 20 {
		f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
	}
}

func (f *failureLog) count() int64 { return f.n.Load() }

// report fails the test with the failures kept, if there was any.
func (f *failureLog) report(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.msgs {
		t.Error(m)
	}
	if f.n.Load() > 0 {
		t.FailNow()
	}
}

// churnCount is what the waiters of a churn test saw.
type churnCount struct {
	admitted, admittedAtFault, reconnects atomic.Int64
	inside, maxInside                     atomic.Int64
	resent                                atomic.Int64 // requests sent again after a dropped connection
}

// enter counts a visitor in and records the most inside at once.
func (c *churnCount) enter() {
	n := c.inside.Add(1)
	for m := c.maxInside.Load(); n > m && !c.maxInside.CompareAndSwap(m, n); m = c.maxInside.Load() {
	}
}
