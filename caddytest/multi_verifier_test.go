package caddytest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/draw/drawtest"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// fetch is GET base+path's body, with accept.
func fetch(t *testing.T, base, path, accept string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s%s: %d %s", base, path, resp.StatusCode, body)
	}
	return body
}

// TestMultiDocsVerifierOnRealReceipts: the verifier script of docs/fairness.md, run on
// the receipts two caddy processes on one Redis gave real visitors, agrees with every
// visitor's place (from the receipt after the draw, and from the one before it), and
// refuses a receipt with one character changed, a receipt of another draw (the FIFO
// ticket a visitor got before the pre-queue opened), and a page whose seed does not
// hash to its commitment.
func TestMultiDocsVerifierOnRealReceipts(t *testing.T) {
	t.Parallel() // its own fleet and Redis, and most of its time waiting on the clock: beside the others like it
	run := drawtest.Verifier(t, filepath.Join("..", "docs", "fairness.md"))
	srv := testredis.Start(t)
	caddyBinary(t) // built before the clock starts: the event is in seconds
	room := uniqueRoom(t)
	start := time.Now().Add(45 * time.Second).Truncate(time.Second)
	block := roomBlock(room, "/shop*", 1, "redis redis://"+srv.Addr, "session_ttl 1h", "queue_ttl 10m",
		"away_ttl 30m", "draw_page /shop/draw", drawEvent(start, 30*time.Second))
	f := startFleet(t, 2, func(int) string { return block })

	// Before the pre-queue: a FIFO room, and a FIFO ticket.
	newGuest().place(f.nodes[0].base, "/shop/item") // holds the one slot till the end
	early := newGuest()
	early.place(f.nodes[0].base, "/shop/item")
	fifo := early.receiptAt(t, f.nodes[1].base, "/shop/item")
	if fifo == nil || fifo.Draw != "fifo" {
		t.Fatalf("a waiter's receipt before the pre-queue: %+v", fifo)
	}
	if out, ok := run(fifo.raw, fetch(t, f.nodes[0].base, "/shop/draw/fifo", "application/json"), nil); !ok ||
		!strings.Contains(out, fmt.Sprintf("your ticket was %d in arrival order", fifo.Ticket)) {
		t.Fatalf("the verifier on a FIFO receipt: %q", out)
	}

	// The pre-queue: entries from both instances.
	time.Sleep(time.Until(start.Add(-30 * time.Second)))
	guests := []*guest{early}
	for i := range 10 {
		g := newGuest()
		g.place(f.nodes[i%2].base, "/shop/item")
		guests = append(guests, g)
	}
	before := map[*guest]*receiptOf{}
	for i, g := range guests {
		r := g.receiptAt(t, f.nodes[(i+1)%2].base, "/shop/item")
		if r == nil || !strings.HasPrefix(r.Draw, "event-") {
			t.Fatalf("guest %d's receipt in the pre-queue: %+v", i, r)
		}
		before[g] = r
	}

	// After the draw: every receipt, before it and after, has the place the rule gives.
	time.Sleep(time.Until(start))
	var page drawPage
	eventually(t, "the draw", func() (bool, string) {
		page = readDrawPage(t, f.nodes[0].base, "/shop/draw")
		return page.State == "drawn", string(page.raw)
	})
	entries := fetch(t, f.nodes[1].base, page.EntriesURL, "")
	committedAt := "the draw is the one committed at " + page.Committed
	var one *receiptOf
	for i, g := range guests {
		after := g.receiptAt(t, f.nodes[i%2].base, "/shop/item")
		if after == nil || after.Place == 0 {
			t.Fatalf("guest %d's receipt after the draw: %+v", i, after)
		}
		for _, r := range []*receiptOf{after, before[g]} {
			out, ok := run(r.raw, page.raw, entries)
			if want := fmt.Sprintf("your place was %d, and %s", after.Place, committedAt); !ok || out != want {
				t.Fatalf("guest %d: the verifier says %q, want %q", i, out, want)
			}
		}
		one = after
	}

	// What it refuses, each for its reason.
	changed := regexp.MustCompile(`"ticket":(\d)`).ReplaceAllFunc(one.raw, func(b []byte) []byte {
		d := b[len(b)-1]
		return append(b[:len(b)-1:len(b)-1], '0'+(d-'0'+1)%10)
	})
	badSeed := bytes.Replace(page.raw, []byte(page.Seed), []byte(strings.Repeat("0", 64)), 1)
	for _, c := range []struct {
		name          string
		receipt, page []byte
		says          string
	}{
		{"a receipt with one character changed", changed, page.raw, "the signature is not the room's over this receipt"},
		{"a receipt of another draw", fifo.raw, page.raw, `the receipt is of draw "fifo"`},
		{"a page whose seed is not its commitment", one.raw, badSeed, "seed does not hash to its commitment"},
	} {
		if bytes.Equal(c.receipt, one.raw) && bytes.Equal(c.page, page.raw) {
			t.Fatalf("%s: nothing was changed", c.name)
		}
		if out, ok := run(c.receipt, c.page, entries); ok || !strings.HasPrefix(out, "refused: ") || !strings.Contains(out, c.says) {
			t.Errorf("%s: the verifier says %q, want a refusal saying %q", c.name, out, c.says)
		}
	}
}
