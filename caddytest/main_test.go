package caddytest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

func TestMain(m *testing.M) {
	os.Exit(runWithTempDirs(m))
}

// runWithTempDirs runs the tests with Caddy's data and autosaved config kept out of
// $HOME, and removes them afterwards (os.Exit would skip a deferred cleanup).
func runWithTempDirs(m *testing.M) int {
	for _, v := range []string{"XDG_DATA_HOME", "XDG_CONFIG_HOME"} {
		dir, err := os.MkdirTemp("", "waitingroom-caddytest-")
		if err != nil {
			panic(err)
		}
		defer os.RemoveAll(dir)
		os.Setenv(v, dir)
	}
	// Caddy works out where it autosaves when its package loads, before TestMain.
	caddy.ConfigAutosavePath = filepath.Join(caddy.AppConfigDir(), "autosave.json")
	return m.Run()
}
