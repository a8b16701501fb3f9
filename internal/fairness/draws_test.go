package fairness

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/draw"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue/storetest"
)

var (
	start  = time.Date(2031, 6, 1, 10, 0, 0, 0, time.UTC)
	secret = []byte("a secret of the fairness package's tests, 32 bytes at least")
)

// instance is one instance's draws on a shared store.
func instance(_ *testing.T, room string) *Draws {
	d := New(room, "/.well-known/waiting-room/"+room, nil, nil)
	d.SetSecrets([][]byte{secret})
	return d
}

func failOn(t *testing.T) func(string, error) {
	return func(op string, err error) {
		t.Helper()
		t.Fatalf("%s: %v", op, err)
	}
}

// waiterOf is a queued visitor as the test follows them.
type waiterOf struct {
	id     queue.VisitorID
	since  time.Time
	ticket uint64
}

// rankOf is the rule, written here apart from internal/draw: HMAC-SHA256 with the
// seed's bytes as the key and the entry id's text as the message.
func rankOf(seedHex, entry string) string {
	seed, _ := hex.DecodeString(seedHex)
	m := hmac.New(sha256.New, seed)
	m.Write([]byte(entry))
	return hex.EncodeToString(m.Sum(nil))
}

// An event's lottery across three instances of a room on one store (restarted from
// its files between every two calls): the first instance to see the pre-queue commits,
// the others read that commitment back, and nothing before the start changes it; the
// seed is on no page before the draw; at the start the line holds while the order is
// placed, and the order it ends in is the rule's, worked out here from the seed and
// the entry ids the receipts give; every receipt then verifies with its place.
func TestEventLotteryAcrossInstances(t *testing.T) {
	ctx := context.Background()
	st := storetest.Restarting(t)
	fleet := []*Draws{instance(t, "drop"), instance(t, "drop"), instance(t, "drop")}
	want := Want{Lottery: start.Format(time.RFC3339Nano), Start: start, Prequeue: true, Reads: 2}
	lim := queue.Limits{Capacity: 1, SessionTTL: time.Hour, QueueTTL: time.Hour, AwayTTL: time.Hour, Hold: true}
	now := start.Add(-time.Hour)
	var commitment string
	var line []waiterOf
	for i := range 30 {
		d := fleet[i%3]
		if plan := d.Advance(ctx, st, now, want, failOn(t)); plan.Hold || plan.Picks != nil || !plan.Reasons {
			t.Fatalf("in the pre-queue: %+v", plan)
		}
		rec := d.Current()
		if rec == nil || rec.State != queue.DrawOpen || rec.ID != EventID(start) {
			t.Fatalf("instance %d in the pre-queue: current draw %+v", i%3, rec)
		}
		if commitment == "" {
			commitment = rec.Seed.Commitment()
		} else if rec.Seed.Commitment() != commitment {
			t.Fatalf("instance %d has commitment %s, the first had %s", i%3, rec.Seed.Commitment(), commitment)
		}
		id := queue.NewVisitorID()
		s, err := st.Join(ctx, id, now, lim)
		if err != nil || s.State != queue.Queued {
			t.Fatalf("join: %+v, %v", s, err)
		}
		line = append(line, waiterOf{id, now, s.Ticket})
		page, err := d.Page(ctx, st, "", now)
		if err != nil {
			t.Fatal(err)
		}
		if page.Seed != "" || bytes.Contains(page.JSON, []byte(`"seed"`)) || page.State != draw.StateOpen {
			t.Fatalf("the page in the pre-queue: %s", page.JSON)
		}
		now = now.Add(time.Minute)
	}
	// A fourth instance (a restart) offers its own seed: the store's stays.
	late := instance(t, "drop")
	late.Advance(ctx, st, now, want, failOn(t))
	if got := late.Current().Seed.Commitment(); got != commitment {
		t.Fatalf("an instance started in the pre-queue has commitment %s, want %s", got, commitment)
	}
	fleet = append(fleet, late)

	// The start: the first instance closes and places; until placed, all hold.
	want.Prequeue = false
	now = start
	for i := 0; ; i++ {
		d := fleet[i%len(fleet)]
		plan := d.Advance(ctx, st, now, want, failOn(t))
		if rec := d.Current(); rec.State == queue.DrawDrawn {
			if plan.Hold {
				t.Fatalf("drawn, and still holding")
			}
			break
		} else if !plan.Hold {
			t.Fatalf("instance %d does not hold while the draw is %v", i%len(fleet), rec.State)
		}
		if i > 20 {
			t.Fatal("the draw was never placed")
		}
	}
	rec := fleet[0].Current()
	for _, d := range fleet {
		d.Advance(ctx, st, now, want, failOn(t))
		d.Work(ctx, st, failOn(t))
	}
	page, err := fleet[2].Page(ctx, st, "", now.Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if page.State != draw.StateDrawn || page.Seed != rec.Seed.String() || !rec.Seed.Matches(commitment) {
		t.Fatalf("the page after the draw: %s", page.JSON)
	}
	list, hash, err := fleet[1].Entries(ctx, st, rec.ID)
	if err != nil || hash != page.EntriesHash {
		t.Fatalf("entries: %v, hash %s, the page's %s", err, hash, page.EntriesHash)
	}
	// Each waiter's receipt, and the order the test works out from the seed and the
	// entry ids alone.
	type entrant struct {
		id    queue.VisitorID
		entry string
		place uint64
	}
	var es []entrant
	for i, w := range line {
		s, err := st.Status(ctx, w.id, now)
		if err != nil || s.State != queue.Queued {
			t.Fatalf("waiter %d after the draw: %+v, %v", i, s, err)
		}
		b, url := fleet[i%len(fleet)].Receipt(Holder{ID: w.id, Ticket: s.Ticket, Since: w.since})
		if b == nil || url != "/.well-known/waiting-room/drop/"+rec.ID {
			t.Fatalf("waiter %d: receipt %s at %q", i, b, url)
		}
		res, err := draw.Verify(b, page.JSON, bytes.NewReader(list))
		if err != nil {
			t.Fatalf("waiter %d's receipt %s: %v", i, b, err)
		}
		if res.Receipt.Place == 0 || res.Place != res.Receipt.Place || uint64(s.Position) != res.Place {
			t.Fatalf("waiter %d: receipt place %d, the rule's %d, position %d", i, res.Receipt.Place, res.Place, s.Position)
		}
		es = append(es, entrant{w.id, res.Receipt.Entry.String(), res.Place})
	}
	slices.SortFunc(es, func(a, b entrant) int {
		return strings.Compare(rankOf(page.Seed, a.entry), rankOf(page.Seed, b.entry))
	})
	lim.Hold, lim.Capacity = false, len(line)
	res, err := st.Step(ctx, now, lim)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range es {
		if e.place != uint64(i+1) || res.Admitted[i] != e.id {
			t.Fatalf("the %d-th in the rule's order has place %d and was admitted %d-th", i+1, e.place, slices.Index(res.Admitted, e.id)+1)
		}
	}
}

// A random draw's picks are the present waiters first in the draw's order, and they
// go in in that order; the close publishes the seed, and every pick's receipt then
// verifies with its place among the entrants.
func TestRandomDrawPicksInTheRulesOrder(t *testing.T) {
	ctx := context.Background()
	st := queue.NewMemoryStore()
	d := instance(t, "drop")
	lim := queue.Limits{Capacity: 1, SessionTTL: time.Hour, QueueTTL: time.Hour, AwayTTL: time.Hour}
	now := start
	holder := queue.NewVisitorID()
	st.Join(ctx, holder, now, lim)
	var line []waiterOf
	for range 20 {
		id := queue.NewVisitorID()
		s, _ := st.Join(ctx, id, now, lim)
		line = append(line, waiterOf{id, now, s.Ticket})
	}
	want := Want{Random: true, Reads: 2, Step: true, Free: 3}
	plan := d.Advance(ctx, st, now, want, failOn(t))
	rec := d.Current()
	if rec == nil || !rec.Random() || rec.State != queue.DrawOpen || plan.Picks == nil || plan.Picks.Draw != rec.ID {
		t.Fatalf("mode random: %+v, current %+v", plan, rec)
	}
	receipts := map[queue.VisitorID][]byte{}
	var admitted []queue.VisitorID
	for len(admitted) < 12 {
		lim.Random, lim.Picks, lim.Capacity = true, plan.Picks, len(admitted)+1+3
		res, err := st.Step(ctx, now, lim)
		if err != nil {
			t.Fatal(err)
		}
		admitted = append(admitted, res.Admitted...)
		plan = d.Advance(ctx, st, now, want, failOn(t))
	}
	for _, w := range line {
		b, _ := d.Receipt(Holder{ID: w.id, Ticket: w.ticket, Since: w.since})
		receipts[w.id] = b
	}
	d.Advance(ctx, st, now, Want{Reads: 2}, failOn(t)) // mode random ends
	if rec := d.Current(); rec.State != queue.DrawDrawn {
		t.Fatalf("after mode random: %+v", rec)
	}
	page, err := d.Page(ctx, st, rec.ID, now)
	if err != nil {
		t.Fatal(err)
	}
	list, _, err := d.Entries(ctx, st, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range admitted {
		res, err := draw.Verify(receipts[id], page.JSON, bytes.NewReader(list))
		if err != nil {
			t.Fatalf("pick %d: %v", i, err)
		}
		if res.Place != uint64(i+1) {
			t.Fatalf("pick %d has place %d: everyone was present, so the picks go by place", i+1, res.Place)
		}
	}
	var p struct {
		AdmittedByReason json.RawMessage `json:"admitted_by_reason"`
	}
	if err := json.Unmarshal(page.JSON, &p); err != nil || len(p.AdmittedByReason) == 0 {
		t.Fatalf("page %s: %v", page.JSON, err)
	}
}
