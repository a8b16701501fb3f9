package caddytest

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/statefile"
)

// The embedded store across a restart of the real Caddy process, on the same data
// directory: a sale of capacity 3 with 8 in line (the reproduction) is stopped
// (SIGTERM), or killed (SIGKILL), and started again; then the visitors come back last
// first. Everyone admitted is still in, every waiter is at the place it had, a new
// arrival goes to the end, and the next free slot goes to the head of the line; with
// a configured secret and with the generated one, which the state file (0600) keeps.
// A state file damaged while the instance was down never stops it: the room starts
// from the save before, or empty, and the file is kept aside for the operator.

const restartCapacity, restartWaiters = 3, 8

// restartQueueTTL is the room's queue_ttl in the restart tests: short, so that the
// downtime of the tests that restart after it (restartDowntime) outlasts it, and a
// room whose clocks ran on while it was down would find every waiter gone quiet; and
// well beyond the room's own time from a waiter's last request to the restart's
// first (two save periods before a kill, the start, the requests before its own).
const (
	restartQueueTTL = 8 * time.Second
	restartDowntime = restartQueueTTL + time.Second
)

// restartSale is one real Caddy with a room on the memory store, and its visitors:
// in, admitted at once, and waiting, in their order of arrival.
type restartSale struct {
	t       *testing.T
	f       *fleet
	nd      *node
	room    string
	in      []*guest
	waiting []*guest
	message string // the message to the line, PATCHed at the start: every answer carries it
}

// startRestartSale starts the node with the room on store (what follows `store`),
// with a configured secret or without one (and more options), and lets restartCapacity visitors in and
// restartWaiters in line, each heard from once more after joining, as their page's
// first poll would.
func startRestartSale(t *testing.T, store string, secret bool, options ...string) *restartSale {
	t.Helper()
	room := uniqueRoom(t)
	extra := append([]string{"queue_ttl " + restartQueueTTL.String()}, options...)
	if secret {
		extra = append(extra, "secret "+saleSecret)
	}
	f := startFleet(t, 1, func(int) string { return roomBlock(room, "/shop*", restartCapacity, store, extra...) })
	s := &restartSale{t: t, f: f, nd: f.nodes[0], room: room, message: "Doors open at nine"}
	patchFleetRoom(t, s.nd, room, `{"message": "`+s.message+`"}`)
	for i := range restartCapacity {
		g := newGuest()
		s.let(fmt.Sprintf("in%d", i+1), g)
		s.in = append(s.in, g)
	}
	for i := range restartWaiters {
		g := newGuest()
		s.at(fmt.Sprintf("waiter%d", i+1), g, i+1, i+1)
		s.waiting = append(s.waiting, g)
	}
	for i, g := range s.waiting {
		s.at(fmt.Sprintf("waiter%d", i+1), g, i+1, restartWaiters)
	}
	return s
}

// let asks for a page of the shop as g, who must get through to the upstream.
func (s *restartSale) let(who string, g *guest) {
	s.t.Helper()
	q, in, err := g.place(s.nd.base, "/shop/"+who)
	switch {
	case err != nil:
		s.t.Fatalf("%s: %v", who, err)
	case !in:
		s.t.Errorf("%s was not let in: queued at %d of %d (%d active)", who, q.Position, q.Waiting, q.Active)
	}
}

// at asks for a page of the shop as g, who must be queued at position of waiting,
// with the room full and never over.
func (s *restartSale) at(who string, g *guest, position, waiting int) {
	s.t.Helper()
	q, in, err := g.place(s.nd.base, "/shop/"+who)
	switch {
	case err != nil:
		s.t.Fatalf("%s: %v", who, err)
	case in:
		s.t.Errorf("%s was let in; had position %d", who, position)
	case q.Position != position || q.Waiting != waiting || q.Active != restartCapacity:
		s.t.Errorf("%s at %d of %d (%d active), want %d of %d (%d active)",
			who, q.Position, q.Waiting, q.Active, position, waiting, restartCapacity)
	case q.Message != s.message:
		s.t.Errorf("%s is told the message %q, want %q", who, q.Message, s.message)
	}
}

// stateFile is the room's state file on the node: the default, in Caddy's data
// directory.
func (s *restartSale) stateFile() string { return stateFileOf(s.nd, s.room) }

// stateFileOf is room's state file on nd, where the memory store keeps it by default
// (a plain room name, as uniqueRoom makes, is its own file name).
func stateFileOf(nd *node, room string) string {
	return filepath.Join(nd.dataDir(), "waiting_room", url.PathEscape(room)+".state")
}

// comeBack checks the sale after the restart, the visitors coming back last first:
// every waiter at its place (told the PATCHed message), everyone admitted still in;
// then a new arrival at the end, and when one admitted visitor checks out, the head
// of the line in and nobody else.
func (s *restartSale) comeBack() {
	t := s.t
	t.Helper()
	n := len(s.waiting)
	for i := len(s.waiting) - 1; i >= 0; i-- {
		s.at(fmt.Sprintf("waiter%d", i+1), s.waiting[i], i+1, n)
	}
	for i := len(s.in) - 1; i >= 0; i-- {
		s.let(fmt.Sprintf("in%d", i+1), s.in[i])
	}
	if t.Failed() {
		t.FailNow()
	}
	late := newGuest()
	s.at("a new arrival", late, n+1, n+1)

	if _, body, err := s.in[0].get(s.nd.base, "/shop/done", ""); err != nil || body != "done" {
		t.Fatalf("in1's checkout: %q %v", body, err)
	}
	head := s.waiting[0]
	waitFor(t, "the head of the line to be let in", func() bool {
		_, in, err := head.place(s.nd.base, "/shop/waiter1")
		return err == nil && in
	})
	for i, g := range s.waiting[1:] {
		s.at(fmt.Sprintf("waiter%d", i+2), g, i+1, n)
	}
	s.at("the new arrival", late, n, n)
	for i, g := range s.in[1:] {
		s.let(fmt.Sprintf("in%d", i+2), g)
	}
}

// savedSince waits until the room's state file holds every change made before since.
func (s *restartSale) savedSince(since time.Time) {
	s.t.Helper()
	savedSince(s.t, s.stateFile(), since)
}

// savedSince waits until the state file holds every change made before since: until
// the save before the file's (now its .prev) was itself written after since, so that
// the file's was taken after since.
func savedSince(t testing.TB, file string, since time.Time) {
	t.Helper()
	waitFor(t, "two saves of the state file", func() bool {
		_, err := os.Stat(file)
		prev, perr := os.Stat(file + ".prev")
		return err == nil && perr == nil && prev.ModTime().After(since)
	})
}

// checkFile checks the state file that the stop left: mode 0600, in a 0700
// directory; without a configured secret, it holds the generated one, which is
// nowhere in the log (a configured secret is not kept in it).
func (s *restartSale) checkFile(generated bool) {
	t := s.t
	t.Helper()
	file := s.stateFile()
	for path, want := range map[string]os.FileMode{file: 0o600, filepath.Dir(file): 0o700 | os.ModeDir} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatalf("the room's state file after the stop: %v", err)
		}
		if fi.Mode() != want {
			t.Errorf("%s has mode %v, want %v", path, fi.Mode(), want)
		}
	}
	body, err := statefile.Read(file)
	if err != nil {
		t.Fatalf("reading %s: %v", file, err)
	}
	st, err := queue.LoadMemoryStore(body, s.room, time.Now())
	if err != nil {
		t.Fatalf("loading %s: %v", file, err)
	}
	secret, _ := st.Secret(context.Background(), nil)
	if !generated {
		if len(secret) > 0 {
			t.Errorf("the state file holds a secret of %d bytes, with a secret configured", len(secret))
		}
		return
	}
	if len(secret) < 32 {
		t.Errorf("the state file holds a secret of %d bytes, without a secret configured", len(secret))
		return
	}
	log := s.nd.log()
	for _, enc := range []string{string(secret), hex.EncodeToString(secret), base64.StdEncoding.EncodeToString(secret),
		base64.RawURLEncoding.EncodeToString(secret), base64.RawStdEncoding.EncodeToString(secret)} {
		if strings.Contains(log, enc) {
			t.Errorf("the log holds the room's secret")
		}
	}
}

// secretCases runs test with a configured secret and with the generated one.
func secretCases(t *testing.T, test func(t *testing.T, secret bool)) {
	for _, c := range []struct {
		name   string
		secret bool
	}{{"configured secret", true}, {"generated secret", false}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			test(t, c.secret)
		})
	}
}

// A graceful stop in the middle of the sale loses nothing: SIGTERM (an orchestrator's
// stop), or `caddy stop` (its admin endpoint's /stop), as in the reproduction
// with a configured secret. The room saves only at its stop (save_every 1h), so what
// the restart finds is the stop's save alone; the restart comes after queue_ttl,
// which is not counted against the quiet waiters.
func TestRestartGracefulStopKeepsTheSale(t *testing.T) {
	for _, c := range []struct {
		name   string
		secret bool
		stop   func(*node, testing.TB)
	}{
		{"SIGTERM/configured secret", true, (*node).stop},
		{"SIGTERM/generated secret", false, (*node).stop},
		{"caddy stop/configured secret", true, (*node).stopByAdmin},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := startRestartSale(t, "memory {\n\t\t\tsave_every 1h\n\t\t}", c.secret)
			c.stop(s.nd, t)
			s.checkFile(!c.secret)
			time.Sleep(restartDowntime)
			s.f.restart(s.nd)
			s.comeBack()
		})
	}
}

// A crash (SIGKILL) loses nothing saved: killed after the default save period has
// passed since the last change, the room comes back whole.
func TestRestartCrashKeepsTheSale(t *testing.T) {
	secretCases(t, func(t *testing.T, secret bool) {
		s := startRestartSale(t, "memory", secret)
		s.savedSince(time.Now())
		s.nd.kill(t)
		s.checkFile(!secret)
		time.Sleep(restartDowntime)
		s.f.restart(s.nd)
		s.comeBack()
	})
}

// A crash in the middle of the sale's joins loses at most the changes since the
// last save, and only those: killed right after a stream of joins that spans a save
// or so (a join every 100 ms), the room comes back with every place older than a save
// exact, and of the stream a first part (the save is a snapshot), never a part from
// the middle. Of the burst, who lost the place
// comes back as a new visitor (a new cookie) at the back, never in; who kept it is at
// its place.
func TestRestartCrashLosesOnlyTheLastChanges(t *testing.T) {
	secretCases(t, func(t *testing.T, secret bool) {
		s := startRestartSale(t, "memory", secret)
		s.savedSince(time.Now())
		const burst = 12
		var late []*guest
		var ids []string
		for i := range burst {
			g := newGuest()
			s.at(fmt.Sprintf("late waiter %d", i+1), g, restartWaiters+i+1, restartWaiters+i+1)
			id, err := g.visitorID(s.nd.base, s.room)
			if err != nil {
				t.Fatal(err)
			}
			late, ids = append(late, g), append(ids, id)
			time.Sleep(100 * time.Millisecond)
		}
		s.nd.kill(t)
		s.f.restart(s.nd)

		kept, lost := 0, 0
		for i := burst - 1; i >= 0; i-- {
			who := fmt.Sprintf("late waiter %d", i+1)
			q, in, err := late[i].place(s.nd.base, "/shop/"+who)
			id, _ := late[i].visitorID(s.nd.base, s.room)
			switch {
			case err != nil:
				t.Fatalf("%s: %v", who, err)
			case in:
				t.Fatalf("%s was let in after the crash", who)
			case id == ids[i]:
				kept++
				if q.Position != restartWaiters+i+1 {
					t.Errorf("%s kept its place through the crash, but at %d, want %d", who, q.Position, restartWaiters+i+1)
				}
			case kept > 0:
				t.Errorf("%s lost its place in the crash, and the later waiter %d kept it", who, i+1+kept)
			default:
				lost++
				if q.Position != q.Waiting {
					t.Errorf("%s lost its place in the crash, and is at %d of %d, not at the back", who, q.Position, q.Waiting)
				}
			}
		}
		t.Logf("of %d joins in the %v before the crash, %d came back with their place and %d as new visitors", burst, burst*100*time.Millisecond, kept, lost)
		for i := restartWaiters - 1; i >= 0; i-- {
			s.at(fmt.Sprintf("waiter%d", i+1), s.waiting[i], i+1, restartWaiters+burst)
		}
		for i := len(s.in) - 1; i >= 0; i-- {
			s.let(fmt.Sprintf("in%d", i+1), s.in[i])
		}
	})
}

// A state file damaged while the instance was down (a byte flipped) never stops
// Caddy: the instance starts, logs an error that names the file, and restores the
// save before it (.prev), the one the first restart's stop replaced. Two waiters who
// joined after that save are unknown to it: they go to the back, in the order they
// come back, and nobody is let in over capacity.
func TestRestartFlippedByteFallsBackToTheSaveBefore(t *testing.T) {
	secretCases(t, func(t *testing.T, secret bool) {
		s := startRestartSale(t, "memory {\n\t\t\tsave_every 1h\n\t\t}", secret)
		s.nd.stop(t)
		s.f.restart(s.nd)
		var later []*guest
		for i := range 2 {
			g := newGuest()
			s.at(fmt.Sprintf("waiter%d", restartWaiters+i+1), g, restartWaiters+i+1, restartWaiters+i+1)
			later = append(later, g)
		}
		s.nd.stop(t)
		file := s.stateFile()
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0x10
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
		logged := len(s.nd.log())
		s.f.restart(s.nd)
		s.requireLogged(logged, file, "corrupted")
		s.keptAside(file, b)

		// Back last first: the two the save before does not know rejoin at the back.
		s.at("waiter10", later[1], restartWaiters+1, restartWaiters+1)
		s.at("waiter9", later[0], restartWaiters+2, restartWaiters+2)
		s.waiting = append(s.waiting, later[1], later[0])
		for i := restartWaiters - 1; i >= 0; i-- {
			s.at(fmt.Sprintf("waiter%d", i+1), s.waiting[i], i+1, restartWaiters+2)
		}
		for i := len(s.in) - 1; i >= 0; i-- {
			s.let(fmt.Sprintf("in%d", i+1), s.in[i])
		}

		// The next save keeps the one it restored from as the save before it, not
		// the damaged file.
		s.nd.stop(t)
		for _, f := range []string{file, file + ".prev"} {
			if _, err := statefile.Read(f); err != nil {
				t.Errorf("%s after the next stop: %v", f, err)
			}
		}
		s.keptAside(file, b)
	})
}

// A state file that cannot be trusted, with no save before it to fall back to, never
// stops Caddy: cut short, written for another room, or by a newer version. The
// instance starts, logs an error that names the file and what is wrong with it, and
// the room starts empty. The visitors coming back are new visitors of an empty room:
// the first restartCapacity go in, the rest wait in the order they came back, and
// nobody is let in over capacity. The PATCHed message went with the file.
func TestRestartUntrustedFileStartsEmpty(t *testing.T) {
	for _, c := range []struct {
		name, logged string
		damage       func(t *testing.T, room string, b []byte) []byte
	}{
		{"truncated", "truncated", func(_ *testing.T, _ string, b []byte) []byte { return b[:len(b)/2] }},
		{"another room's", "written for another room", func(t *testing.T, room string, b []byte) []byte {
			body, err := statefile.Unframe(b)
			if err != nil {
				t.Fatal(err)
			}
			st, err := queue.LoadMemoryStore(body, room, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			return statefile.Frame(st.AppendState(nil, room+"_other", time.Now()))
		}},
		{"a newer version's", "written by a newer version", func(_ *testing.T, _ string, b []byte) []byte {
			b = slices.Clone(b)
			binary.BigEndian.PutUint16(b[len("cwrstate"):], statefile.Version+1)
			return b
		}},
	} {
		for _, secret := range []bool{true, false} {
			name := c.name + "/configured secret"
			if !secret {
				name = c.name + "/generated secret"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				s := startRestartSale(t, "memory {\n\t\t\tsave_every 1h\n\t\t}", secret)
				s.nd.stop(t)
				file := s.stateFile()
				if _, err := os.Stat(file + ".prev"); err == nil {
					t.Fatalf("%s.prev is there: the room saved before its stop", file)
				}
				b, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				damaged := c.damage(t, s.room, b)
				if err := os.WriteFile(file, damaged, 0o600); err != nil {
					t.Fatal(err)
				}
				logged := len(s.nd.log())
				s.f.restart(s.nd)
				s.requireLogged(logged, file, c.logged)
				s.keptAside(file, damaged)
				s.message = ""

				back := append(append([]*guest(nil), s.waiting...), s.in...)
				for i := len(back) - 1; i >= 0; i-- {
					who, n := fmt.Sprintf("visitor %d of the sale", i+1), len(back)-i
					if n <= restartCapacity {
						s.let(who, back[i])
					} else {
						s.at(who, back[i], n-restartCapacity, n-restartCapacity)
					}
				}
				s.nd.stop(t)
				s.keptAside(file, damaged)
			})
		}
	}
}

// keptAside fails the test unless the damaged state file is kept, as it was, beside
// the room's (file.bad), for the operator to look into: the saves after the restart
// must not write over it.
func (s *restartSale) keptAside(file string, damaged []byte) {
	s.t.Helper()
	got, err := os.ReadFile(file + ".bad")
	switch {
	case err != nil:
		s.t.Errorf("the damaged state file is not kept aside: %v", err)
	case string(got) != string(damaged):
		s.t.Errorf("%s.bad holds %d bytes, not the %d of the damaged file", file, len(got), len(damaged))
	}
}

// requireLogged fails the test unless the node's log, past its first from bytes,
// holds an error naming file and saying what.
func (s *restartSale) requireLogged(from int, file, what string) {
	s.t.Helper()
	log := s.nd.log()[from:]
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "error") && strings.Contains(line, file) && strings.Contains(line, what) {
			s.t.Logf("logged: %s", line)
			return
		}
	}
	s.t.Fatalf("no error naming %s as %s in the log of the restart:\n%s", file, what, tail(log, 4000))
}

// A second Caddy on the same data directory (started by mistake, or while the first
// is still stopping) never shares the room's state file: it warns that the file is in
// use and serves the room in memory only, and its stop writes nothing. Stopped after
// the first, it does not write over the first's save: the first, restarted, finds its
// sale whole.
func TestRestartSecondCaddyOnTheDataLeavesTheFileAlone(t *testing.T) {
	s := startRestartSale(t, "memory {\n\t\t\tsave_every 1h\n\t\t}", true)
	rooms := roomBlock(s.room, "/shop*", restartCapacity, "memory {\n\t\t\tsave_every 1h\n\t\t}",
		"queue_ttl "+restartQueueTTL.String(), "secret "+saleSecret)
	other := s.f.startBeside(s.nd, 1, rooms)
	file := s.stateFile()
	found := false
	for _, line := range strings.Split(other.log(), "\n") {
		if strings.Contains(line, `"warn"`) && strings.Contains(line, file) && strings.Contains(line, "in use by another process") {
			t.Logf("logged: %s", line)
			found = true
		}
	}
	if !found {
		t.Errorf("the second Caddy did not warn that %s is in use:\n%s", file, tail(other.log(), 4000))
	}
	if _, in, err := newGuest().place(other.base, "/shop/elsewhere"); err != nil || !in {
		t.Errorf("the second Caddy's room, in memory, did not let a first visitor in (%v)", err)
	}

	s.nd.stop(t)
	saved, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	other.stop(t)
	if now, err := os.ReadFile(file); err != nil || string(now) != string(saved) {
		t.Fatalf("the second Caddy's stop wrote over the first's save (%v)", err)
	}
	s.f.restart(s.nd)
	s.comeBack()
}

// A `caddy reload` in the middle of the sale changes nothing of it: the new config
// takes the room's state over, without reading the file again nor warning that it is
// in use, and goes on saving it: a waiter who joined after the reload, saved, is at
// its place after a crash.
func TestRestartAfterReloadStillSaves(t *testing.T) {
	s := startRestartSale(t, "memory", true)
	cfg, err := os.ReadFile(filepath.Join(s.nd.dir, "Caddyfile"))
	if err != nil {
		t.Fatal(err)
	}
	reloaded := strings.Replace(string(cfg), `respond "ok"`, `respond "ok, reloaded"`, 1)
	logged := len(s.nd.log())
	resp, err := http.Post(s.nd.admin+"/load", "text/caddyfile", strings.NewReader(reloaded))
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("reload: %d %s", resp.StatusCode, answer)
	}
	if _, body, err := newGuest().get(s.nd.base, "/healthz", ""); err != nil || body != "ok, reloaded" {
		t.Fatalf("the reload did not take: %q %v", body, err)
	}
	if log := s.nd.log()[logged:]; strings.Contains(log, "waiting_room") {
		t.Errorf("the reload logged about the room:\n%s", tail(log, 4000))
	}
	for i, g := range s.waiting {
		s.at(fmt.Sprintf("waiter%d", i+1), g, i+1, restartWaiters)
	}
	g := newGuest()
	s.at("waiter9", g, restartWaiters+1, restartWaiters+1)
	s.waiting = append(s.waiting, g)
	s.savedSince(time.Now())
	s.nd.kill(t)
	s.f.restart(s.nd)
	s.comeBack()
}

// A waiter let in from the line just before the stop has the rest of its arrival
// window (arrive_ttl) after the restart, in the room's time (the downtime is longer
// than the window): coming, it goes in; not coming, the slot goes to the next in line
// once the window has run out, and the waiter, back later, is first in line.
func TestRestartKeepsTheArrivalWindow(t *testing.T) {
	for _, comes := range []bool{true, false} {
		name := map[bool]string{true: "arrives", false: "does not arrive"}[comes]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := startRestartSale(t, "memory {\n\t\t\tsave_every 1h\n\t\t}", true, "arrive_ttl 5s")
			if _, body, err := s.in[0].get(s.nd.base, "/shop/done", ""); err != nil || body != "done" {
				t.Fatalf("in1's checkout: %q %v", body, err)
			}
			waitFor(t, "waiter1 to be let in from the line", func() bool {
				q, in, err := s.waiting[1].place(s.nd.base, "/shop/waiter2")
				return err == nil && !in && q.Position == 1 && q.Waiting == restartWaiters-1
			})
			s.nd.stop(t)
			time.Sleep(restartDowntime) // longer than the window: it must not run while down
			s.f.restart(s.nd)
			if comes {
				s.let("waiter1", s.waiting[0])
				for i, g := range s.waiting[1:] {
					s.at(fmt.Sprintf("waiter%d", i+2), g, i+1, restartWaiters-1)
				}
				return
			}
			// The others are heard from meanwhile, as their pages would be.
			waitFor(t, "waiter2 to be given the slot waiter1 did not take", func() bool {
				_, in, err := s.waiting[1].place(s.nd.base, "/shop/waiter2")
				if err != nil || in {
					return err == nil
				}
				for _, g := range s.waiting[2:] {
					if _, in, err := g.place(s.nd.base, "/shop/later"); err != nil || in {
						t.Fatalf("a waiter behind waiter2 was let in (%v)", err)
					}
				}
				return false
			})
			q, in, err := s.waiting[0].place(s.nd.base, "/shop/waiter1")
			switch {
			case err != nil:
				t.Fatal(err)
			case in:
				t.Fatal("waiter1, who did not arrive in time, was let in over capacity")
			case q.Position != 1:
				t.Errorf("waiter1, back after missing its turn, is at %d, want 1", q.Position)
			}
			for i, g := range s.waiting[2:] {
				s.at(fmt.Sprintf("waiter%d", i+3), g, i+2, restartWaiters-1)
			}
		})
	}
}

// A fixed shopping time (session_max) does not run while the instance is down: the
// visitors let in at the start, 8 s into their 12 s when the instance stops and
// down for 5 s, are still in after the restart; their time runs out in the room's
// time after it, and the slots go to the head of the line.
func TestRestartKeepsTheShoppingTime(t *testing.T) {
	const sessionMax, before, down = 12 * time.Second, 8 * time.Second, 5 * time.Second
	s := startRestartSale(t, "memory {\n\t\t\tsave_every 1h\n\t\t}", true, "session_max "+sessionMax.String())
	admitted := time.Now()
	for time.Since(admitted) < before { // the waiters' pages are heard from meanwhile
		for i, g := range s.waiting {
			s.at(fmt.Sprintf("waiter%d", i+1), g, i+1, restartWaiters)
		}
		time.Sleep(time.Second)
	}
	s.nd.stop(t)
	time.Sleep(down)
	s.f.restart(s.nd)
	for i := len(s.in) - 1; i >= 0; i-- {
		s.let(fmt.Sprintf("in%d", i+1), s.in[i])
	}
	if t.Failed() {
		t.FailNow()
	}
	waitFor(t, "the shopping time to run out and the head of the line to go in", func() bool {
		_, in, err := s.waiting[0].place(s.nd.base, "/shop/waiter1")
		if err == nil && !in {
			for _, g := range s.waiting[1:] {
				_, _, _ = g.place(s.nd.base, "/shop/later")
			}
		}
		return err == nil && in
	})
	for i := 1; i < restartCapacity; i++ {
		g := s.waiting[i]
		waitFor(t, fmt.Sprintf("waiter%d to go in", i+1), func() bool {
			_, in, err := g.place(s.nd.base, "/shop/next")
			return err == nil && in
		})
	}
	for i, g := range s.waiting[restartCapacity:] {
		s.at(fmt.Sprintf("waiter%d", i+restartCapacity+1), g, i+1, restartWaiters-restartCapacity)
	}
}
