package queue

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// The memory store forgets each once-only key at its instant, so what it holds is
// bounded by the keys of one challenge life, and a full set refuses rather than
// forgets early.
func TestOnceKeysAreSweptAndBounded(t *testing.T) {
	s := NewMemoryStore()
	now := time.Unix(1_800_000_000, 0)
	s.once.now = func() time.Time { return now }
	ctx := context.Background()
	for i := range 100 {
		if ok, _ := s.Once(ctx, "k"+strconv.Itoa(i), now.Add(time.Duration(i+1)*time.Second)); !ok {
			t.Fatalf("key %d refused on first offer", i)
		}
	}
	now = now.Add(50 * time.Second)
	if ok, _ := s.Once(ctx, "k99", now.Add(time.Hour)); ok {
		t.Fatal("k99 accepted twice before its instant")
	}
	if n := s.once.len(); n != 50 {
		t.Fatalf("after 50 of 100 instants passed, %d keys are kept, want 50", n)
	}
	if ok, _ := s.Once(ctx, "k0", now.Add(time.Minute)); !ok {
		t.Fatal("k0 refused after its instant passed and it was forgotten")
	}

	full := NewMemoryStore()
	full.once.now = func() time.Time { return now }
	full.once.until = make(map[string]int64, maxOnceKeys) // filled by hand: a million offers take long under -race
	for i := range maxOnceKeys {
		full.once.until["f"+strconv.Itoa(i)] = now.Add(time.Minute).UnixNano()
	}
	if ok, _ := full.Once(ctx, "new", now.Add(time.Minute)); ok {
		t.Fatalf("a new key was accepted with %d keys held", maxOnceKeys)
	}
}
