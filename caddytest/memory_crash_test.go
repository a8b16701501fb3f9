package caddytest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// What a crash loses on the embedded store, measured: visitors join a real Caddy
// without pause, it is killed (SIGKILL) in the middle, and started again on the same
// data directory; then every visitor who had been answered asks again. The state is
// saved once a second (save_every, the default), so the joins of about the last second
// before the kill are lost, and none before. The test logs how many of the joins of
// each 100 ms before the kill came back (docs/performance.md, "Durable memory store")
// and asserts only what must hold on any machine: every join answered more than two
// saves before the kill came back, at exactly its place; what came back is a prefix of
// the line (a save is one moment's state, never a part of one); and the visitor
// admitted first is still in.
func TestMemoryCrashLosesOnlyTheLastSaves(t *testing.T) {
	const (
		room      = "crash"
		saveEvery = time.Second
		joiners   = 8
	)
	// The kill falls anywhere in the saver's second, not at the same moment of it
	// in every run.
	loadFor := 3*time.Second + rand.N(saveEvery)
	f := startFleet(t, 1, func(int) string {
		return roomBlock(room, "/sale/*", 1, "memory", "session_ttl 1h", "queue_ttl 1h")
	})
	nd := f.nodes[0]

	// A join is a visitor's first request and what it was told: a place (0 for the one
	// visitor let in, the first).
	type join struct {
		g        *guest
		at       time.Time
		position int
	}
	var (
		mu     sync.Mutex
		joins  []join
		killed atomic.Bool
		wg     sync.WaitGroup
	)
	first := newGuest()
	if _, admitted, err := first.place(nd.base, "/sale/x"); err != nil || !admitted {
		t.Fatalf("the first visitor was not let in: %v", err)
	}
	joins = append(joins, join{g: first, at: time.Now()})
	for range joiners {
		wg.Go(func() {
			for !killed.Load() {
				g := newGuest()
				q, admitted, err := g.place(nd.base, "/sale/x")
				at := time.Now()
				switch {
				case killed.Load():
					return // in flight at the kill: never answered, so never promised a place
				case err != nil || admitted:
					t.Errorf("a join before the kill: admitted %v, %v", admitted, err)
					return
				}
				mu.Lock()
				joins = append(joins, join{g: g, at: at, position: q.Position})
				mu.Unlock()
			}
		})
	}
	time.Sleep(loadFor)
	mu.Lock()
	killed.Store(true)
	kill := time.Now()
	mu.Unlock()
	if err := nd.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-nd.exited
	wg.Wait()
	if t.Failed() {
		return
	}

	nd = relaunch(t, f, nd)
	info := fleetRoomInfo(t, nd, room)
	// Each asks again, the newest first, so that a lost visitor, who joins again at
	// the back, is told a place past every restored one.
	slices.SortFunc(joins, func(a, b join) int { return cmp.Compare(b.position, a.position) })
	back := make([]bool, len(joins))
	var next, misplaced atomic.Int64
	var ask sync.WaitGroup
	for range joiners {
		ask.Go(func() {
			for i := int(next.Add(1) - 1); i < len(joins); i = int(next.Add(1) - 1) {
				j := joins[i]
				q, admitted, err := j.g.place(nd.base, "/sale/x")
				switch {
				case err != nil:
					t.Errorf("after the restart: %v", err)
				case j.position == 0:
					back[i] = admitted
				case !admitted && q.Position == j.position && j.position <= info.Waiting:
					back[i] = true
				case admitted || q.Position <= info.Waiting:
					if misplaced.Add(1) == 1 {
						t.Errorf("the waiter at %d came back at %d (admitted %v), with %d waiters restored", j.position, q.Position, admitted, info.Waiting)
					}
				}
			}
		})
	}
	ask.Wait()
	if n := misplaced.Load(); n > 1 {
		t.Errorf("and %d more waiters came back at another place", n-1)
	}

	// The figures: per 100 ms before the kill, the joins answered and how many came back.
	const bucket = 100 * time.Millisecond
	buckets := int(2*saveEvery/bucket) + 1
	made, kept := make([]int, buckets), make([]int, buckets)
	lost, lostOld, newestBack := 0, 0, time.Duration(-1)
	for i, j := range joins {
		before := max(kill.Sub(j.at), 0)
		if b := int(before / bucket); b < buckets {
			made[b]++
			if back[i] {
				kept[b]++
			}
		}
		if !back[i] {
			lost++
			if before > 2*saveEvery {
				lostOld++
			}
		} else if newestBack < 0 || before < newestBack {
			newestBack = before
		}
		if j.position == 0 && !back[i] {
			t.Errorf("the visitor let in first was not let in after the restart")
		}
	}
	if lostOld > 0 {
		t.Errorf("%d joins answered more than %v before the kill were lost", lostOld, 2*saveEvery)
	}
	var lines []string
	for b := range buckets {
		lines = append(lines, fmt.Sprintf("%4d–%4d ms: %4d of %4d", b*100, (b+1)*100, kept[b], made[b]))
	}
	t.Logf("%d joins in %v from %d joiners; after the SIGKILL %d came back (%d waiters restored), %d were lost; the newest that came back was answered %v before the kill.\nCame back, by when answered before the kill:\n%s",
		len(joins), loadFor.Round(time.Millisecond), joiners, len(joins)-lost, info.Waiting, lost, newestBack.Round(time.Millisecond), strings.Join(lines, "\n"))

	// What came back is a prefix of the line: one save's moment. The room may have
	// restored a few more than came back: joins it saved whose answer was still on
	// its way at the kill, at most one a joiner.
	if got := len(joins) - lost; got > info.Waiting+1 || got < info.Waiting+1-joiners {
		t.Errorf("%d came back, but the room restored %d waiters and one admitted", got, info.Waiting)
	}
	for i := range joins { // newest first
		if i > 0 && back[i-1] && !back[i] {
			t.Errorf("the waiter at %d came back, but the one at %d before it did not", joins[i-1].position, joins[i].position)
		}
	}
}

// relaunch starts nd's Caddy again, on the same Caddyfile and data directory, as a
// supervisor restarts a crashed process, and waits until it answers. Its log goes to a
// file of its own beside the first.
func relaunch(t *testing.T, f *fleet, nd *node) *node {
	t.Helper()
	dir := filepath.Dir(nd.logPath)
	again := &node{name: nd.name, base: nd.base, admin: nd.admin,
		logPath: filepath.Join(dir, "caddy-again.log"), exited: make(chan struct{})}
	logFile, err := os.Create(again.logPath)
	if err != nil {
		t.Fatal(err)
	}
	again.cmd = exec.Command(nd.cmd.Path, nd.cmd.Args[1:]...)
	again.cmd.Env = nd.cmd.Env
	again.cmd.Stdout, again.cmd.Stderr = logFile, logFile
	if err := again.cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("starting %s again: %v", nd.name, err)
	}
	go func() {
		_ = again.cmd.Wait()
		logFile.Close()
		close(again.exited)
	}()
	t.Cleanup(func() {
		if again.alive() {
			_ = again.cmd.Process.Kill()
		}
		<-again.exited
		if log := again.log(); strings.Contains(log, "panic") || strings.Contains(log, "fatal error") {
			t.Errorf("%s logged a panic after its restart:\n%s", again.name, tail(log, 4000))
		}
	})
	f.waitReady(again)
	return again
}

// fleetRoomInfo reads one room from nd's admin API.
func fleetRoomInfo(t *testing.T, nd *node, room string) roomObject {
	t.Helper()
	code, body := adminAt(t, nd.admin, http.MethodGet, "/waiting_room/"+room, "")
	if code != http.StatusOK {
		t.Fatalf("GET room on %s: %d %s", nd.name, code, body)
	}
	var info roomObject
	if err := json.Unmarshal([]byte(body), &info); err != nil {
		t.Fatal(err)
	}
	return info
}
