package room

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// A reload that replaces the room's secret without listing the old one after it
// makes every cookie given out so far a stranger's: the new room says so, once, when
// it starts beside the running one. Listing the old secret, or keeping it, says
// nothing.
func TestReplacedSecretIsWarnedOf(t *testing.T) {
	newSecret := []byte("fedcba9876543210fedcba9876543210")
	for _, tc := range []struct {
		name     string
		secrets  [][]byte
		warnings int
	}{
		{"replaced", [][]byte{newSecret}, 1},
		{"rotated, the old one listed", [][]byte{newSecret, testSecret}, 0},
		{"kept", [][]byte{testSecret}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			running, _ := newTestRoom(t, 1, nil)
			core, logs := observer.New(zapcore.WarnLevel)
			newTestRoom(t, 1, func(c *Config) {
				c.Secrets, c.Store, c.Logger = tc.secrets, running.cfg.Store, zap.New(core)
				c.Siblings = func() []*Room { return []*Room{running} }
			})
			if n := logs.FilterMessageSnippet("is not listed as a previous secret").Len(); n != tc.warnings {
				t.Fatalf("%d warnings, want %d: %v", n, tc.warnings, logs.All())
			}
		})
	}
}
