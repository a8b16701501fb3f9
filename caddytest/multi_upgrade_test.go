package caddytest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// saleSecret is the fleet's configured secret in the sale tests: every instance, of
// either version, signs and opens with it.
const saleSecret = "side-by-side-sale-secret-0123456789abcdef"

// TestMultiUpgradeSideBySide upgrades a fleet of two in the middle of a sale, one
// instance at a time, as an orchestrator's rolling update does: both instances start
// on the previous release (testdata/previous-release, built from its commit), one is
// replaced by this tree's build, then the other, on one real Redis. Each visitor's
// every request goes to the other instance than its last, so while the versions run
// side by side each reads what the other gave out, in both directions: cookies of waiters and of sessions, passes
// minted on one instance's admin API and used on the other, hand-off codes asked on one
// and opened on the other, and the store's keys (each instance's admin API counts the
// room as the sale has it). Throughout: nobody loses a place or a session, whichever
// instance they reach; every waiter is at exactly its place; the next one in is always
// the head of the line, pass holders first; the store's active set never holds more
// than capacity.
func TestMultiUpgradeSideBySide(t *testing.T) {
	previous := previousCaddyBinary(t)
	current := caddyBinary(t)
	srv := testredis.Start(t)
	room := uniqueRoom(t)
	const capacity = 2
	rooms := roomBlock(room, "/shop*", capacity, "redis redis://"+srv.Addr,
		"secret "+saleSecret, "queue_ttl 2m", "away_ttl 10m", "session_ttl 1h")
	f := &fleet{t: t}
	startAs := func(bin string, i int, version string) *node {
		nd := f.start(bin, i, rooms)
		f.waitReady(nd)
		nd.name = fmt.Sprintf("node%d (%s)", i, version)
		return nd
	}
	f.nodes = []*node{startAs(previous, 0, "previous release"), startAs(previous, 1, "previous release")}
	s := newSale(t, f, room, capacity, newRedisClient(t, srv.Addr))

	// The sale begins on the previous release.
	s.join("h1", s.next(), "")
	s.join("h2", s.next(), "")
	for i := 1; i <= 4; i++ {
		s.join(fmt.Sprintf("w%d", i), s.next(), "")
	}
	s.check("on the previous release")

	// One instance replaced: the two versions side by side.
	f.nodes[0].stop(t)
	f.nodes[0] = startAs(current, 0, "this build")
	current0, previous1 := f.nodes[0], f.nodes[1]
	s.check("node0 upgraded")
	s.join("w5", current0, "")
	s.join("w6", previous1, "")
	s.check("newcomers on both versions")
	newPass := mintFleetPasses(t, current0, room, 1, 1)[0]
	oldPass := mintFleetPasses(t, previous1, room, 1, 1)[0]
	s.join("p1", previous1, newPass) // minted on this build, used on the previous release
	s.join("p2", current0, oldPass)  // and the other way
	s.check("pass holders from both versions")
	s.handoff(4, previous1, current0) // w3: asked on the previous release, opened on this build
	s.handoff(5, current0, previous1) // w4: the other way
	s.check("hand-offs across the versions")
	s.checkout(0) // h1: p1 in
	s.checkout(0) // h2: p2 in
	s.check("pass holders let in")
	// w1's waiting socket, held by the previous release, is told of the turn that the
	// checkout on this build frees (the store's Pub/Sub across the versions).
	sock, err := s.line[0].g.socket(context.Background(), previous1.base, "/shop")
	if err != nil {
		t.Fatalf("w1's socket on %s: %v", previous1.name, err)
	}
	defer sock.CloseNow()
	if m, err := readMessage(context.Background(), sock); err != nil || m.Type != "position" || m.Position != 1 {
		t.Fatalf("w1's socket on %s: %+v (%v), want position 1", previous1.name, m, err)
	}
	s.checkout(0) // p1: w1 in
	if err := awaitAdmitted(context.Background(), sock); err != nil {
		t.Fatalf("w1's socket on %s after its turn came: %v", previous1.name, err)
	}
	s.join("w7", s.next(), "")
	s.check("the sale goes on side by side")
	// This build sees the previous release in the fleet record by its lease (renewed
	// as it held w1's socket), within the record's period: the fleet reads level 1,
	// and this build writes only what level 1 reads.
	var got struct{ Instances, Reads, Level int }
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if got = fleetOf(t, current0, room); got.Instances == 2 {
			break
		}
	}
	if got.Instances != 2 || got.Reads != 1 || got.Level < 1 {
		t.Fatalf("the fleet as %s sees it beside the previous release: %+v, want 2 instances reading level 1", current0.name, got)
	}

	// The other instance replaced: this build only.
	f.nodes[1].stop(t)
	f.nodes[1] = startAs(current, 1, "this build")
	s.check("node1 upgraded")
	s.join("w8", s.next(), "")
	for len(s.line) > 0 {
		s.checkout(0)
		s.check(fmt.Sprintf("after %d let in", len(s.order)))
	}

	want := []string{"h1", "h2", "p1", "p2", "w1", "w2", "w3's phone", "w4's phone", "w5", "w6", "w7", "w8"}
	if fmt.Sprint(s.order) != fmt.Sprint(want) {
		t.Fatalf("let in in the order %v, want %v", s.order, want)
	}
	if s.samples.Load() < 20 {
		t.Fatalf("only %d samples of the active set", s.samples.Load())
	}
	t.Logf("%d let in, in arrival order, across the upgrade; %d samples of the active set, at most %d active of %d",
		len(s.order), s.samples.Load(), s.maxActive.Load(), capacity)
	f.requireUp()
}

// fleetOf is the room's fleet as nd's admin API shows it.
func fleetOf(t *testing.T, nd *node, room string) (f struct{ Instances, Reads, Level int }) {
	t.Helper()
	resp, err := http.Get(nd.admin + "/waiting_room/" + room)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var info struct {
		Fleet *struct{ Instances, Reads, Level int }
	}
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil || resp.StatusCode != http.StatusOK || info.Fleet == nil {
		t.Fatalf("GET the room on %s: %d, %v, fleet %v", nd.name, resp.StatusCode, err, info.Fleet)
	}
	return *info.Fleet
}
