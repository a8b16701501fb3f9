package redisstore

import (
	"context"
	"testing"
	"time"
)

// A burst of go-redis log lines (an outage) comes out as one line per period, with the
// count of the lines held back.
func TestQuietLoggerRateLimits(t *testing.T) {
	var lines []int
	l := &quietLogger{period: time.Hour, emit: func(_ string, suppressed int) { lines = append(lines, suppressed) }}
	for range 1000 {
		l.Printf(context.Background(), "dial tcp %s: connection refused", "127.0.0.1:6379")
	}
	if len(lines) != 1 || lines[0] != 0 {
		t.Fatalf("1000 lines in one period came out as %v", lines)
	}
	l.mu.Lock()
	l.last = l.last.Add(-2 * time.Hour) // the period has passed
	l.mu.Unlock()
	l.Printf(context.Background(), "again")
	if len(lines) != 2 || lines[1] != 999 {
		t.Fatalf("after the period: %v, want a second line counting 999 held back", lines)
	}
}
