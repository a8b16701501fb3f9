package waitingroom

import (
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/waitingroom/memorystore"
)

// withStateDir keeps the memory store's state files in a directory of the test's
// own, for the test's length.
func withStateDir(t *testing.T) string {
	dir := t.TempDir()
	was := memorystore.Dir
	memorystore.Dir = func() string { return dir }
	t.Cleanup(func() { memorystore.Dir = was })
	return dir
}

// A room without a configured secret, stopped and started again: its file is in
// the data directory under the room's name, readable by Caddy alone; the generated
// secret came back with it, so every cookie still holds: the admitted are in, and
// the waiters, coming back last first, are where they were.
func TestMemoryStoreStopAndStartKeepsEveryPlace(t *testing.T) {
	dir := withStateDir(t)
	name := "restart " + t.Name()
	sameName := func(h *Handler) { h.Name = name }
	first := newTestRoomWith(t, 2, sameName)
	var in, line []string
	for range 6 {
		w, c := first.visit("", "application/json")
		if w.Code == 200 && first.passed.Load() > int64(len(in)) {
			in = append(in, c)
		} else {
			line = append(line, c)
		}
	}
	if len(in) != 2 || len(line) != 4 {
		t.Fatalf("%d in and %d in line, want 2 and 4", len(in), len(line))
	}
	if err := first.h.Cleanup(); err != nil { // the last config with the room: its store goes, saved
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, url.PathEscape(name)+".state")) // the room's name escaped as in a path
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Fatalf("the state file has mode %v, want 0600: it holds the generated secret", perm)
	}

	again := newTestRoomWith(t, 2, func(h *Handler) { h.Name = name; h.clock = first.clock })
	for i := len(line) - 1; i >= 0; i-- {
		if v := again.queued(line[i]); v.Position != i+1 {
			t.Fatalf("waiter %d came back at %d", i+1, v.Position)
		}
	}
	for i, c := range in {
		before := again.passed.Load()
		if again.visit(c, ""); again.passed.Load() != before+1 {
			t.Fatalf("admitted visitor %d was not let through after the restart", i+1)
		}
	}
	if v := again.queued(""); v.Position != len(line)+1 {
		t.Fatalf("a new arrival after the restart is at %d, want %d", v.Position, len(line)+1)
	}
}
