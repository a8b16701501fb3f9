package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// The operator's levers (the admin API) and the counts the metrics report.

func testAbandonedAreCounted(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(1)
	r.join(t0, lim) // holds the slot
	var kept queue.VisitorID
	for i := 0; i < 4; i++ {
		id, _ := r.join(t0, lim)
		if i == 3 {
			kept = id
		}
	}
	later := t0.Add(lim.QueueTTL / 2)
	r.heartbeat(later, kept)
	res := r.stepResult(t0.Add(lim.QueueTTL+time.Second), lim)
	if res.Abandoned != 3 || len(res.Admitted) != 0 {
		t.Fatalf("step after three waiters went silent: %+v, want 3 abandoned, none admitted", res)
	}
	if st := r.status(kept, t0.Add(lim.QueueTTL+time.Second)); st.State != queue.Queued || st.Position != 1 {
		t.Fatalf("the waiter that kept talking is %+v, want queued at 1", st)
	}
}

func testAdmitNowBeyondCapacity(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(2)
	sub := newSubscriber()
	defer r.s.Subscribe(sub.deliver)()
	r.join(t0, lim)
	r.join(t0, lim)
	var waiters []queue.VisitorID
	for i := 0; i < 5; i++ {
		id, _ := r.join(t0.Add(time.Duration(i)*time.Millisecond), lim)
		waiters = append(waiters, id)
	}
	res, err := r.s.AdmitNow(context.Background(), 3, t0.Add(time.Second), lim)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Admitted, waiters[:3]) {
		t.Fatalf("AdmitNow(3) admitted %v, want the first three waiters %v", res.Admitted, waiters[:3])
	}
	r.wantStats(queue.Stats{Active: 5, Waiting: 2, AdmittedTotal: 5})
	sub.waitFor(t, "the forced admissions", waiters[:3])
	if pos := r.status(waiters[3], t0.Add(time.Second)).Position; pos != 1 {
		t.Fatalf("next waiter at %d after AdmitNow, want 1", pos)
	}
	// Over capacity, a normal step admits nobody.
	if ids := r.step(t0.Add(2*time.Second), lim); len(ids) != 0 {
		t.Fatalf("step over capacity admitted %v", ids)
	}
	// Asking for more than wait admits those who wait.
	res, _ = r.s.AdmitNow(context.Background(), 10, t0.Add(3*time.Second), lim)
	if !slices.Equal(res.Admitted, waiters[3:]) {
		t.Fatalf("AdmitNow(10) with two waiting admitted %v", res.Admitted)
	}
}

func testReset(t *testing.T, open Open) {
	r := newRoom(t, open)
	lim := limits(1)
	admitted, _ := r.join(t0, lim)
	waiter, st := r.join(t0, lim)
	if err := r.s.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.wantStats(queue.Stats{Active: 0, Waiting: 0, AdmittedTotal: 1})
	if r.touch(admitted, t0) {
		t.Fatal("an admitted visitor survived the reset")
	}
	if s := r.status(waiter, t0); s.State != queue.Unknown {
		t.Fatalf("a waiter survived the reset: %+v", s)
	}
	// The room works as new; tickets keep growing so an old cookie cannot alias a new
	// waiter.
	if _, s := r.join(t0, lim); s.State != queue.Admitted {
		t.Fatalf("first visitor after the reset: %+v", s)
	}
	_, s := r.join(t0, lim)
	if s.State != queue.Queued || s.Position != 1 || s.Ticket <= st.Ticket {
		t.Fatalf("second visitor after the reset: %+v (ticket before reset %d)", s, st.Ticket)
	}
	if got := r.positions(st.Ticket); got[0] != 0 {
		t.Fatalf("pre-reset ticket still has position %d", got[0])
	}
}

func testOverrides(t *testing.T, open Open) {
	r := newRoom(t, open)
	ctx := context.Background()
	if doc, err := r.s.Overrides(ctx); err != nil || doc != nil {
		t.Fatalf("a new room has overrides %q, %v", doc, err)
	}
	want := []byte(`{"capacity":12}`)
	if ok, err := r.s.SwapOverrides(ctx, nil, want); err != nil || !ok {
		t.Fatalf("setting the first overrides: swapped %v, %v", ok, err)
	}
	if doc, err := r.s.Overrides(ctx); err != nil || !bytes.Equal(doc, want) {
		t.Fatalf("overrides read back as %q, %v", doc, err)
	}
	// A writer that read before another one saved is refused and changes nothing.
	for _, stale := range [][]byte{nil, []byte(`{"capacity":11}`)} {
		if ok, err := r.s.SwapOverrides(ctx, stale, []byte(`{"mode":"random"}`)); err != nil || ok {
			t.Fatalf("a swap from %q over %q: swapped %v, %v", stale, want, ok, err)
		}
		if doc, _ := r.s.Overrides(ctx); !bytes.Equal(doc, want) {
			t.Fatalf("a refused swap left %q, want %q", doc, want)
		}
	}
	if ok, err := r.s.SwapOverrides(ctx, want, nil); err != nil || !ok {
		t.Fatalf("clearing the overrides: swapped %v, %v", ok, err)
	}
	if doc, err := r.s.Overrides(ctx); err != nil || doc != nil {
		t.Fatalf("cleared overrides read back as %q, %v", doc, err)
	}
}

// testOverridesConcurrentPatches: many writers, each changing its own setting with
// read, merge and SwapOverrides (retrying when another got in between, as a PATCH
// does), from many goroutines at once (instances sharing the store): every change
// survives.
func testOverridesConcurrentPatches(t *testing.T, open Open) {
	r := newRoom(t, open)
	ctx := context.Background()
	const writers, rounds = 16, 4
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	start := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			<-start
			for round := range rounds {
				if err := patchOverride(ctx, r.s, fmt.Sprintf("s%d", w), round); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	doc, err := r.s.Overrides(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]int
	if err := json.Unmarshal(doc, &got); err != nil {
		t.Fatalf("overrides %q: %v", doc, err)
	}
	for w := range writers {
		if v, ok := got[fmt.Sprintf("s%d", w)]; !ok || v != rounds-1 {
			t.Errorf("setting s%d is %d (present %v), want its last change %d: a change was lost", w, v, ok, rounds-1)
		}
	}
	if len(got) != writers {
		t.Errorf("overrides %q hold %d settings, want %d", doc, len(got), writers)
	}
}

// patchOverride sets one setting of the overrides document to value the way a PATCH
// saves: read, merge, swap, and again from the top while another writer got in first.
func patchOverride(ctx context.Context, s queue.Store, name string, value int) error {
	for {
		old, err := s.Overrides(ctx)
		if err != nil {
			return err
		}
		settings := map[string]int{}
		if len(old) > 0 {
			if err := json.Unmarshal(old, &settings); err != nil {
				return fmt.Errorf("overrides %q: %w", old, err)
			}
		}
		settings[name] = value
		doc, _ := json.Marshal(settings)
		ok, err := s.SwapOverrides(ctx, old, doc)
		if err != nil || ok {
			return err
		}
	}
}
