package queue

import (
	"context"
	"errors"
	"testing"
	"time"
)

// stateLimits are the limits of the state tests: every clock the room counts.
var stateLimits = Limits{Capacity: 2, SessionTTL: 10 * time.Minute, SessionMax: 20 * time.Minute,
	QueueTTL: 30 * time.Second, AwayTTL: 5 * time.Minute, ArriveTTL: 20 * time.Second}

// richStore is a store holding something of every kind the state keeps, and the
// ids of its admitted visitors and its waiters, in order.
func richStore(t testing.TB, t0 time.Time) (*MemoryStore, []VisitorID, []VisitorID) {
	t.Helper()
	ctx, s, lim := context.Background(), NewMemoryStore(), stateLimits
	var in, line []VisitorID
	_, _ = s.Shuffle(ctx, "event-1") // drawn before anyone came: the order stays arrival's
	for i := range 6 {
		id := NewVisitorID()
		st, _ := s.Join(ctx, id, t0.Add(time.Duration(i)*time.Millisecond), lim)
		if st.State == Admitted {
			in = append(in, id)
		} else {
			line = append(line, id)
		}
	}
	pass := NewVisitorID()
	if _, ok, _ := s.JoinPass(ctx, pass, PassUse{ID: "p1", Uses: 3, Expires: t0.Add(time.Hour)}, t0, lim); !ok {
		t.Fatal("pass refused")
	}
	line = append([]VisitorID{pass}, line...)
	moved := NewVisitorID()
	if _, ok, _ := s.Move(ctx, line[len(line)-1], moved, t0, lim); !ok {
		t.Fatal("move refused")
	}
	line[len(line)-1] = moved
	_, _ = s.Secret(ctx, []byte("a secret of thirty-two bytes, at least"))
	_, _ = s.SwapOverrides(ctx, nil, []byte(`{"message":"soon"}`))
	_, _ = s.Once(ctx, "proof-1", time.Now().Add(time.Hour))
	_ = s.Report(ctx, 7, Sample{Latency: []uint64{1, 2, 3}, Failed: 1})
	return s, in, line
}

// A restore resumes the room's clocks: an hour down counts against nobody, and the
// ages the room counts run on from where they stopped.
func TestRestoreResumesTheClocks(t *testing.T) {
	ctx, lim := context.Background(), stateLimits
	t0 := time.Unix(1_900_000_000, 0)
	s, in, line := richStore(t, t0)
	saved := t0.Add(10 * time.Second)
	body := s.AppendState(nil, "shop", saved)
	back := saved.Add(time.Hour)
	r, err := LoadMemoryStore(body, "shop", back)
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := r.Step(ctx, back, lim); len(res.Admitted)+res.Abandoned+res.NoShows != 0 {
		t.Fatalf("the first step after an hour down did %+v, want nothing: the downtime counts", res)
	}
	for i, id := range line {
		if st, _ := r.Status(ctx, id, back); st.State != Queued || st.Position != i+1 {
			t.Fatalf("waiter %d after the restore: %+v, want queued at %d", i, st, i+1)
		}
	}
	for _, id := range in {
		st, _ := r.Status(ctx, id, back)
		if st.State != Admitted || st.Since.Before(t0.Add(time.Hour)) || st.Since.After(t0.Add(time.Hour+10*time.Millisecond)) {
			t.Fatalf("admitted visitor after the restore: %+v, want admitted since %v (its admission, an hour on)", st, t0.Add(time.Hour))
		}
	}
	// session_max ends the sessions 20 minutes of uptime after their admission.
	end := back.Add(lim.SessionMax - 10*time.Second)
	for _, at := range []time.Time{end.Add(-time.Second), end} {
		for _, id := range append(in, line...) {
			_, _ = r.Touch(ctx, id, at)
			_, _ = r.Status(ctx, id, at)
		}
		_, _ = r.Step(ctx, at, Limits{Capacity: 0, SessionTTL: lim.SessionTTL, SessionMax: lim.SessionMax,
			QueueTTL: lim.QueueTTL, AwayTTL: lim.AwayTTL})
		st, _ := r.Status(ctx, in[0], at)
		if want := map[bool]State{false: Admitted, true: Unknown}[at.Equal(end)]; st.State != want {
			t.Fatalf("at %v of uptime after admission the session is %v, want %v", at.Sub(back)+10*time.Second, st.State, want)
		}
	}
}

// A place that had expired before the save is not revived by the restore.
func TestRestoreRevivesNoExpiredPlace(t *testing.T) {
	ctx, lim := context.Background(), stateLimits
	t0 := time.Unix(1_900_000_000, 0)
	s := NewMemoryStore()
	full := lim
	full.Capacity = 0
	gone, _ := NewVisitorID(), NewVisitorID()
	_, _ = s.Join(ctx, gone, t0, full)
	_, _ = s.Status(ctx, gone, t0) // heard from: kept away, for AwayTTL
	saved := t0.Add(lim.AwayTTL + time.Second)
	r, err := LoadMemoryStore(s.AppendState(nil, "shop", saved), "shop", saved.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := r.Step(ctx, saved.Add(time.Hour), full); res.Abandoned != 1 {
		t.Fatalf("the first step dropped %d places, want the 1 that had expired before the save", res.Abandoned)
	}
	if st, _ := r.Status(ctx, gone, saved.Add(time.Hour)); st.State != Unknown {
		t.Fatalf("the expired place after the restore: %+v, want unknown", st)
	}
}

func TestRestoreRefusesAnotherRoomsState(t *testing.T) {
	t0 := time.Unix(1_900_000_000, 0)
	s, _, _ := richStore(t, t0)
	if _, err := LoadMemoryStore(s.AppendState(nil, "shop", t0), "other", t0); !errors.Is(err, ErrOtherRoom) {
		t.Fatalf("another room's state: %v, want ErrOtherRoom", err)
	}
}

// A body cut anywhere is refused, never read as a smaller room.
func TestRestoreRefusesATruncatedBody(t *testing.T) {
	t0 := time.Unix(1_900_000_000, 0)
	s, _, _ := richStore(t, t0)
	body := s.AppendState(nil, "shop", t0)
	for n := range len(body) {
		if _, err := LoadMemoryStore(body[:n], "shop", t0); err == nil {
			t.Fatalf("the body cut at %d of %d bytes was restored", n, len(body))
		}
	}
	if _, err := LoadMemoryStore(append(body, 0), "shop", t0); err == nil {
		t.Fatal("the body with a byte past its end was restored")
	}
}

// A line of one waiter kept while a million tickets went by is restored in the
// same order, numbered densely, not as a million empty slots.
func TestRestoreNumbersASparseLineDensely(t *testing.T) {
	ctx, lim := context.Background(), stateLimits
	lim.Capacity = 0
	t0 := time.Unix(1_900_000_000, 0)
	s := NewMemoryStore()
	first, last := NewVisitorID(), NewVisitorID()
	_, _ = s.Join(ctx, first, t0, lim)
	for range maxSlack + 16 {
		id := NewVisitorID()
		_, _ = s.Join(ctx, id, t0, lim)
		_, _ = s.Leave(ctx, id)
	}
	_, _ = s.Join(ctx, last, t0, lim)
	r, err := LoadMemoryStore(s.AppendState(nil, "shop", t0), "shop", t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.slots) != 2 {
		t.Fatalf("the restored line has %d slots, want 2", len(r.slots))
	}
	for i, id := range []VisitorID{first, last} {
		if st, _ := r.Status(ctx, id, t0); st.Position != i+1 {
			t.Fatalf("waiter %d restored at %+v", i, st)
		}
	}
	next := NewVisitorID()
	if st, _ := r.Join(ctx, next, t0, lim); st.Position != 3 {
		t.Fatalf("a new arrival after the restore: %+v, want position 3", st)
	}
}

// The estimator's evidence comes back with the store, so the ETA after a restart
// is the one before it, not "estimating".
func TestRestoreKeepsTheEstimatorsEvidence(t *testing.T) {
	t0 := time.Unix(1_900_000_000, 0)
	s := NewMemoryStore()
	for i := range 30 {
		s.Estimator().Observe(t0.Add(time.Duration(i)*time.Second), uint64(4*i))
	}
	before, ok := s.Estimator().Rate()
	if !ok {
		t.Fatal("no rate before the restart")
	}
	saved := t0.Add(30 * time.Second)
	r, err := LoadMemoryStore(s.AppendState(nil, "shop", saved), "shop", saved.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if after, ok := r.Estimator().Rate(); !ok || after != before {
		t.Fatalf("the rate after the restart is %v (known %v), want %v", after, ok, before)
	}
	// The evidence is an hour on, as the clocks are: the next sample extends it.
	r.Estimator().Observe(saved.Add(time.Hour+time.Second), 4*30)
	if after, _ := r.Estimator().Rate(); after >= before || after < before*0.9 {
		t.Fatalf("one more second of evidence after the restart made the rate %v from %v", after, before)
	}
}
