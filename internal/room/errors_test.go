package room

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// A store call the caller gave up on (a client that left, the room stopping) is no
// outage: only the store's own failures are logged, and those at most once per period.
func TestCanceledCallIsNoOutage(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	rm, _ := newTestRoom(t, 1, func(c *Config) { c.Logger = zap.New(core) })
	rm.storeError("touch", fmt.Errorf("touching: %w", context.Canceled))
	if n := logs.Len(); n != 0 {
		t.Fatalf("a canceled call logged %d outage lines", n)
	}
	rm.storeError("touch", errors.New("connection refused"))
	rm.storeError("touch", errors.New("connection refused"))
	if n := logs.Len(); n != 1 {
		t.Fatalf("two failures in one period logged %d lines, want 1", n)
	}
}
