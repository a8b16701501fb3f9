package queue

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// The memory store forgets each once-only key at its instant, so what it holds is
// bounded by the keys of one challenge life.
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

}

// A flood of distinct proofs, a hundred times the table's bound within one challenge
// life, never locks anyone out: the table stays within its bound (the keys nearest
// their instant make way), a fresh proof is still accepted after it, and the proofs of
// the last moments are still refused a second time.
func TestOnceKeysUnderAFloodStayBoundedAndAcceptFreshProofs(t *testing.T) {
	s := NewMemoryStore()
	now := time.Unix(1_800_000_000, 0)
	s.once.now = func() time.Time { return now }
	s.once.bound = 1000
	ctx := context.Background()
	const flood = 100_000
	for i := range flood {
		now = now.Add(time.Millisecond) // 100 s in all: none reaches its instant
		if ok, _ := s.Once(ctx, "flood"+strconv.Itoa(i), now.Add(5*time.Minute)); !ok {
			t.Fatalf("distinct proof %d of the flood refused with %d keys held", i, s.once.len())
		}
		if n := s.once.len(); n > s.once.bound {
			t.Fatalf("after %d distinct proofs the table holds %d keys, over its bound %d", i+1, n, s.once.bound)
		}
	}
	if ok, _ := s.Once(ctx, "a real visitor", now.Add(5*time.Minute)); !ok {
		t.Fatalf("a fresh proof after a flood of %d was refused", flood)
	}
	for i := flood - 100; i < flood; i++ {
		if ok, _ := s.Once(ctx, "flood"+strconv.Itoa(i), now.Add(5*time.Minute)); ok {
			t.Fatalf("proof %d of the flood, among the last hundred, was accepted twice", i)
		}
	}
	if n := s.once.len(); n != s.once.bound {
		t.Fatalf("the table holds %d keys after the flood, want its bound %d", n, s.once.bound)
	}
}
