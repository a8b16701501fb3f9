package queue

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// Whatever a state body holds, restoring it never panics, and a body it accepts is
// a store that holds together: its counts are its visitors', every waiter's position
// is its place in its lane, and saving it again and restoring that gives the same
// bytes (so it was read as written, not guessed at).
func FuzzLoadMemoryStore(f *testing.F) {
	t0 := time.Unix(1_900_000_000, 0)
	s, _, _ := richStore(f, t0)
	f.Add(s.AppendState(nil, "shop", t0))
	f.Add(NewMemoryStore().AppendState(nil, "shop", t0))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := LoadMemoryStore(body, "shop", t0)
		if err != nil {
			return
		}
		checkWhole(t, r, t0)
		once := r.AppendState(nil, "shop", t0)
		again, err := LoadMemoryStore(once, "shop", t0)
		if err != nil {
			t.Fatalf("the store restored from an accepted body saves a body it refuses: %v", err)
		}
		if twice := again.AppendState(nil, "shop", t0); !bytes.Equal(once, twice) {
			t.Fatal("saving the restored store, restoring and saving again changed the body")
		}
	})
}

// checkWhole fails t unless the store's counts and positions agree with its
// visitors.
func checkWhole(t *testing.T, s *MemoryStore, now time.Time) {
	t.Helper()
	var active, waiting, away int
	for id, v := range s.visitors {
		if v.id != id {
			t.Fatalf("visitor %s is filed under %s", v.id, id)
		}
		switch {
		case v.state == Admitted:
			active++
		case v.away:
			away++
		default:
			waiting++
		}
	}
	st, _ := s.Stats(context.Background())
	if st.Active != active || st.Waiting != waiting || st.Away != away || s.active.len != active {
		t.Fatalf("stats %+v, but the visitors are %d admitted, %d waiting, %d away", st, active, waiting, away)
	}
	pos := 0
	for _, lane := range [][]*memVisitor{s.pass.slots, s.slots} {
		for _, v := range lane {
			if v == nil || v.away {
				continue
			}
			pos++
			if got := s.positionLocked(v.ticket); got != pos {
				t.Fatalf("waiter %s is at %d, want %d", v.id, got, pos)
			}
		}
	}
	if pos != waiting {
		t.Fatalf("%d waiters in the lanes' slots, %d waiting", pos, waiting)
	}
	_, _ = s.Step(context.Background(), now, stateLimits)
}
