package caddytest

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// Committed draws on real Caddy processes and a real Redis (docs/fairness.md). The
// tests read the draw page and the receipts as any visitor would, and work out the
// rule with their own code (crypto/hmac), never the room's.

// drawPage is a draw page's JSON as a verifier reads it.
type drawPage struct {
	Room        string `json:"room"`
	Draw        string `json:"draw"`
	State       string `json:"state"`
	Committed   string `json:"committed"`
	Commitment  string `json:"commitment"`
	PublicKey   string `json:"public_key"`
	Entrants    *int   `json:"entrants"`
	EntriesHash string `json:"entries_hash"`
	EntriesURL  string `json:"entries_url"`
	Seed        string `json:"seed"`
	Admitted    struct {
		Total map[string]int `json:"total"`
	} `json:"admitted_by_reason"`
	raw []byte
}

// receiptOf is a receipt's members the tests read.
type receiptOf struct {
	Room       string `json:"room"`
	Draw       string `json:"draw"`
	Commitment string `json:"commitment"`
	Entry      string `json:"entry"`
	Ticket     uint64 `json:"ticket"`
	Place      int    `json:"place"`
	raw        []byte
}

// readDrawPage reads the draw page at base+path as JSON; it must set no cookie.
func readDrawPage(t *testing.T, base, path string) drawPage {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || len(resp.Header.Values("Set-Cookie")) > 0 {
		t.Fatalf("%s%s: %d (Set-Cookie %v) %s", base, path, resp.StatusCode, resp.Header.Values("Set-Cookie"), body)
	}
	var p drawPage
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("%s%s: %v: %s", base, path, err, body)
	}
	p.raw = body
	return p
}

// receiptAt asks for the guest's place at base+path and returns its receipt, nil when
// the answer has none (admitted, or the answer that made the place).
func (g *guest) receiptAt(t *testing.T, base, path string) *receiptOf {
	t.Helper()
	_, body, err := g.get(base, path, "application/json")
	if err != nil {
		t.Fatal(err)
	}
	var a struct {
		Receipt json.RawMessage `json:"receipt"`
	}
	if strings.HasPrefix(body, "upstream ") || json.Unmarshal([]byte(body), &a) != nil || len(a.Receipt) == 0 {
		return nil
	}
	var r receiptOf
	if err := json.Unmarshal(a.Receipt, &r); err != nil {
		t.Fatal(err)
	}
	r.raw = a.Receipt
	return &r
}

// rankOf is the rule's key of an entry: HMAC-SHA256 with the seed's bytes as the key
// and the entry id's text as the message, compared as bytes (as hex text, alike).
func rankOf(t *testing.T, seedHex, entry string) string {
	seed, err := hex.DecodeString(seedHex)
	if err != nil || len(seed) != 32 {
		t.Fatalf("seed %q", seedHex)
	}
	m := hmac.New(sha256.New, seed)
	m.Write([]byte(entry))
	return hex.EncodeToString(m.Sum(nil))
}

// commitmentOf is "sha256:" and the hex of SHA-256 of the seed's bytes.
func commitmentOf(t *testing.T, seedHex string) string {
	seed, _ := hex.DecodeString(seedHex)
	sum := sha256.Sum256(seed)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// drawEvent is an event block with a pre-queue and a lottery.
func drawEvent(start time.Time, prequeue time.Duration) string {
	return fmt.Sprintf("event %s %s {\n\t\t\tprequeue %s\n\t\t\tshuffle\n\t\t}",
		start.UTC().Format(time.RFC3339), start.Add(time.Hour).UTC().Format(time.RFC3339), prequeue)
}

// TestMultiCommittedDraw: three caddy processes on one Redis, an event whose
// pre-queue fills from all three. The commitment is published before the start and
// is the same on every instance; a PATCH, a reload and a restart of one instance
// during the pre-queue leave it as it was, and no page gives the seed; at the start
// the revealed seed hashes to the commitment, and the visitors are let in in the
// order the test works out from the seed and the entry ids alone, which is also the
// place each one's receipt says.
func TestMultiCommittedDraw(t *testing.T) {
	t.Parallel() // its own fleet and Redis, and most of its time waiting on the clock: beside the others like it
	srv := testredis.Start(t)
	room := uniqueRoom(t)
	start := time.Now().Add(70 * time.Second).Truncate(time.Second)
	block := roomBlock(room, "/shop*", 1, "redis redis://"+srv.Addr, "session_ttl 1h", "queue_ttl 10m",
		"away_ttl 30m", "draw_page /shop/draw", drawEvent(start, time.Hour))
	f := startFleet(t, 3, func(int) string { return block })
	log := subscribeAdmissions(t, newRedisClient(t, srv.Addr), room)

	// The commitment, the same on every instance, and no seed.
	var committed drawPage
	sameEverywhere := func(when string) {
		t.Helper()
		for _, nd := range f.nodes {
			var p drawPage
			eventually(t, nd.name+"'s page "+when, func() (bool, string) {
				p = readDrawPage(t, nd.base, "/shop/draw")
				return p.State == "open" && p.Commitment != "", string(p.raw)
			})
			if p.Seed != "" || bytes.Contains(p.raw, []byte(`"seed"`)) {
				t.Fatalf("%s's page %s gives a seed: %s", nd.name, when, p.raw)
			}
			if committed.Commitment == "" {
				committed = p
			}
			if p.Commitment != committed.Commitment || p.Draw != committed.Draw || p.Committed != committed.Committed ||
				p.PublicKey != committed.PublicKey {
				t.Fatalf("%s's page %s: %s\nthe first instance's: %s", nd.name, when, p.raw, committed.raw)
			}
			if info, raw := roomAt(t, nd, room); info.Draw == nil || info.Draw.State != "open" || bytes.Contains(raw, []byte(`"seed"`)) {
				t.Fatalf("%s's admin room object %s: %s", nd.name, when, raw)
			}
		}
	}
	sameEverywhere("at the pre-queue's opening")
	if want := "event-" + start.UTC().Format(time.RFC3339); committed.Draw != want {
		t.Fatalf("the draw is %q, want %q", committed.Draw, want)
	}

	var guests []*guest
	join := func(n int) {
		t.Helper()
		for i := range n {
			g := newGuest()
			nd := f.nodes[i%len(f.nodes)]
			if _, admitted, err := g.place(nd.base, "/shop/item"); err != nil || admitted {
				t.Fatalf("a guest on %s in the pre-queue: admitted %v, %v", nd.name, admitted, err)
			}
			guests = append(guests, g)
		}
	}
	join(12)
	patchFleetRoom(t, f.nodes[0], room, `{"capacity": 12, "message": "The sale opens soon"}`)
	sameEverywhere("after a PATCH")
	join(6)
	reloadNode(t, f.nodes[1])
	sameEverywhere("after a reload")
	join(6)
	f.nodes[2].stop(t)
	f.restart(f.nodes[2])
	sameEverywhere("after a restart")
	join(6)

	// Every guest's receipt: of this draw, under this commitment, its entry listed.
	entries := map[string]*guest{}
	ids := map[*guest]string{}
	for i, g := range guests {
		r := g.receiptAt(t, f.nodes[(i+1)%len(f.nodes)].base, "/shop/item")
		if r == nil || r.Draw != committed.Draw || r.Commitment != committed.Commitment || r.Place != 0 {
			t.Fatalf("guest %d's receipt in the pre-queue: %+v", i, r)
		}
		if entries[r.Entry] != nil {
			t.Fatalf("two guests have entry %s", r.Entry)
		}
		entries[r.Entry] = g
		id, err := g.visitorID(f.nodes[0].base, room)
		if err != nil {
			t.Fatal(err)
		}
		ids[g] = id
	}

	// The start: the seed is revealed and is the committed one.
	time.Sleep(time.Until(start))
	var drawn drawPage
	eventually(t, "the draw", func() (bool, string) {
		drawn = readDrawPage(t, f.nodes[1].base, "/shop/draw")
		return drawn.State == "drawn", string(drawn.raw)
	})
	if drawn.Seed == "" || commitmentOf(t, drawn.Seed) != committed.Commitment || drawn.Draw != committed.Draw {
		t.Fatalf("the seed %q does not hash to the commitment %s", drawn.Seed, committed.Commitment)
	}
	if drawn.Entrants == nil || *drawn.Entrants != len(guests) {
		t.Fatalf("the page counts %v entrants, %d joined", drawn.Entrants, len(guests))
	}
	// The rule's order, worked out here.
	order := make([]string, 0, len(entries))
	for e := range entries {
		order = append(order, e)
	}
	slices.SortFunc(order, func(a, b string) int { return strings.Compare(rankOf(t, drawn.Seed, a), rankOf(t, drawn.Seed, b)) })
	var want []string
	for _, e := range order {
		want = append(want, ids[entries[e]])
	}
	// The first twelve are let in (capacity 12), the rest wait with their places.
	eventually(t, "the first twelve let in", func() (bool, string) {
		return len(log.snapshot()) >= 12, fmt.Sprint(len(log.snapshot()))
	})
	for p, e := range order[12:] {
		g := entries[e]
		r := g.receiptAt(t, f.nodes[p%len(f.nodes)].base, "/shop/item")
		if r == nil || r.Place != 12+p+1 || r.Entry != e {
			t.Fatalf("the guest of place %d, still in line, has receipt %+v", 12+p+1, r)
		}
	}
	patchFleetRoom(t, f.nodes[2], room, `{"capacity": 100}`)
	eventually(t, "everyone let in", func() (bool, string) {
		return len(log.snapshot()) >= len(guests), fmt.Sprint(len(log.snapshot()))
	})
	if got := log.snapshot(); !slices.Equal(got, want) {
		var g, w []string
		for i := range got {
			g = append(g, shortID(got[i]))
		}
		for i := range want {
			w = append(w, shortID(want[i]))
		}
		t.Fatalf("let in in the order %v\nthe rule's order is %v", g, w)
	}
	eventually(t, "the page's count of the admissions in order", func() (bool, string) {
		p := readDrawPage(t, f.nodes[0].base, "/shop/draw")
		return p.Admitted.Total["in_order"] == len(guests), string(p.raw)
	})
}

// reloadNode reloads nd's config (POST /load), with its upstream's answer changed so
// the reload is a real one.
func reloadNode(t *testing.T, nd *node) {
	t.Helper()
	cfg, err := os.ReadFile(filepath.Join(nd.dir, "Caddyfile"))
	if err != nil {
		t.Fatal(err)
	}
	reloaded := strings.Replace(string(cfg), `respond "ok"`, `respond "ok, reloaded"`, 1)
	resp, err := http.Post(nd.admin+"/load", "text/caddyfile", strings.NewReader(reloaded))
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("reloading %s: %d %s", nd.name, resp.StatusCode, answer)
	}
	if _, body, err := newGuest().get(nd.base, "/healthz", ""); err != nil || body != "ok, reloaded" {
		t.Fatalf("the reload of %s did not take: %q %v", nd.name, body, err)
	}
}

// adminRoom is what the tests read of a room's admin object.
type adminRoom struct {
	Draw *struct {
		State string `json:"state"`
		Seed  string `json:"seed"`
	} `json:"draw"`
	AdmittedByReason map[string]int `json:"admitted_by_reason"`
	AdmittedTotal    int            `json:"admitted_total"`
}

// roomAt reads room's admin object on nd, and its raw JSON.
func roomAt(t *testing.T, nd *node, room string) (adminRoom, []byte) {
	t.Helper()
	var info adminRoom
	resp, err := http.Get(nd.admin + "/waiting_room/" + room)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &info); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the room on %s: %d %v %s", nd.name, resp.StatusCode, err, raw)
	}
	return info, raw
}

// TestMultiAdmissionsByReason: a FIFO room on two caddy processes and one Redis. The
// draw page (the room's FIFO page) and the admin object count every admission under
// its reason, and the reasons add up to the room's admissions: the line's, in the
// order they arrived (each the lowest ticket still waiting), the pass holders', who
// go first, and the admin's admits, under their own.
func TestMultiAdmissionsByReason(t *testing.T) {
	srv := testredis.Start(t)
	room := uniqueRoom(t)
	f := startFleet(t, 2, func(int) string {
		return roomBlock(room, "/shop*", 1, "redis redis://"+srv.Addr, "session_ttl 1h", "queue_ttl 10m", "draw_page /shop/draw")
	})
	log := subscribeAdmissions(t, newRedisClient(t, srv.Addr), room)
	holder := newGuest()
	if _, admitted, err := holder.place(f.nodes[0].base, "/shop/item"); err != nil || !admitted {
		t.Fatalf("the first visitor of an empty room: admitted %v, %v", admitted, err)
	}
	var line []*guest
	for i := range 6 {
		g := newGuest()
		if _, admitted, err := g.place(f.nodes[i%2].base, "/shop/item"); err != nil || admitted {
			t.Fatalf("waiter %d: admitted %v, %v", i, admitted, err)
		}
		line = append(line, g)
	}
	var lane []*guest
	for i, p := range mintFleetPasses(t, f.nodes[1], room, 2, 1) {
		g := newGuest()
		if a, err := g.withPass(f.nodes[i%2].base, "/shop/item", p); err != nil || a.Status != "queued" || a.Position != i+1 {
			t.Fatalf("pass holder %d: %+v, %v; want queued ahead of the line", i, a, err)
		}
		lane = append(lane, g)
	}
	// Each checkout frees the slot for the next: the lane, then the line in order.
	free := func(g *guest, nd *node) {
		t.Helper()
		if _, body, err := g.get(nd.base, "/shop/done", ""); err != nil || body != "done" {
			t.Fatalf("a checkout on %s: %q %v", nd.name, body, err)
		}
	}
	next := holder
	for i := range 5 {
		// Counted before the checkout: the admission it causes can reach the log
		// before the checkout's answer reaches the test.
		n := len(log.snapshot())
		free(next, f.nodes[i%2])
		eventually(t, "the next one let in", func() (bool, string) {
			var who []string
			for _, id := range log.snapshot() {
				for j, g := range append(slices.Clone(lane), line...) {
					if gid, _ := g.visitorID(f.nodes[0].base, room); gid == id {
						who = append(who, fmt.Sprint(j))
					}
				}
			}
			return len(log.snapshot()) == n+1, fmt.Sprint(len(log.snapshot()), who)
		})
		admitted := log.snapshot()[n]
		next = nil
		for _, g := range append(slices.Clone(lane), line...) {
			if id, _ := g.visitorID(f.nodes[0].base, room); id == admitted {
				next = g
			}
		}
		var want []*guest
		if i < len(lane) {
			want = lane[i:]
		} else {
			want = line[i-len(lane):]
		}
		if next != want[0] {
			t.Fatalf("checkout %d let in another than the first still waiting (%s, lane %d, line %d; log %d)", i+1, shortID(admitted),
				slices.Index(lane, next), slices.Index(line, next), len(log.snapshot()))
		}
	}
	if code, body := adminAt(t, f.nodes[0].admin, http.MethodPost, "/waiting_room/"+room+"/admit", `{"count": 2}`); code != http.StatusOK {
		t.Fatalf("admit 2: %d %s", code, body)
	}
	want := map[string]int{"in_order": 1 + 3, "pass": 2, "admin": 2, "returned": 0, "handoff": 0, "random": 0}
	for _, nd := range f.nodes {
		eventually(t, nd.name+"'s count by reason", func() (bool, string) {
			p := readDrawPage(t, nd.base, "/shop/draw")
			info, raw := roomAt(t, nd, room)
			sum := 0
			for r, n := range p.Admitted.Total {
				if r != "handoff" {
					sum += n
				}
			}
			ok := p.Draw == "fifo" && sum == info.AdmittedTotal && fmt.Sprint(p.Admitted.Total) == fmt.Sprint(want) &&
				fmt.Sprint(info.AdmittedByReason) == fmt.Sprint(want)
			return ok, fmt.Sprintf("page %s\nroom %s", p.raw, raw)
		})
		// Each instance's metric counts what its own calls admitted: all but the
		// hand-offs add up to its admitted_total.
		var sum float64
		for _, r := range []string{"in_order", "pass", "returned", "admin", "random"} {
			sum += metricAtReason(t, nd.admin, room, r)
		}
		if all := metricAt(t, nd.admin, "caddy_waiting_room_admitted_total", room); sum != all {
			t.Fatalf("%s: admitted_by_reason_total adds up to %v, admitted_total is %v", nd.name, sum, all)
		}
	}
	if got := metricAtReason(t, f.nodes[0].admin, room, "admin"); got != 2 {
		t.Fatalf("the instance asked to admit 2 counted %v admin admits", got)
	}
}

// metricAtReason is the admitted_by_reason_total of room and reason on an instance.
func metricAtReason(t *testing.T, admin, room, reason string) float64 {
	t.Helper()
	resp, err := http.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	prefix := fmt.Sprintf(`caddy_waiting_room_admitted_by_reason_total{reason=%q,room=%q} `, reason, room)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	t.Fatalf("no %s on %s", prefix, admin)
	return 0
}
