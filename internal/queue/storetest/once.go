package storetest

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Once is the one method that reads the store's own clock (a key lives until a
// wall-clock instant), so these tests offer instants relative to time.Now.

// testOnceAcceptsEachKeyOnce: the first offer of a key wins, every later one loses,
// other keys are not affected, and a key offered past its instant is refused.
func testOnceAcceptsEachKeyOnce(t *testing.T, open Open) {
	s := open(t)
	ctx := context.Background()
	until := time.Now().Add(time.Minute)
	offer := func(key string, until time.Time) bool {
		t.Helper()
		ok, err := s.Once(ctx, key, until)
		if err != nil {
			t.Fatalf("Once(%q): %v", key, err)
		}
		return ok
	}
	if !offer("a", until) {
		t.Fatal("first offer of a refused")
	}
	if offer("a", until) {
		t.Fatal("second offer of a accepted")
	}
	if offer("a", until.Add(time.Hour)) {
		t.Fatal("a accepted again with a later instant")
	}
	if !offer("b", until) {
		t.Fatal("first offer of b refused after a was taken")
	}
	if offer("c", time.Now().Add(-time.Second)) {
		t.Fatal("c accepted with an instant already past")
	}
	if !offer("d-"+strconv.Itoa(1), until) || !offer("d-"+strconv.Itoa(2), until) {
		t.Fatal("distinct keys refused")
	}
	// A reset empties the line, not the memory of answered challenges.
	if err := s.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if offer("a", until) {
		t.Fatal("a accepted again after Reset")
	}
}

// testOnceUnderConcurrency: of many offers of one key at once, exactly one wins.
func testOnceUnderConcurrency(t *testing.T, open Open) {
	s := open(t)
	until := time.Now().Add(time.Minute)
	const keys, offers = 20, 25
	var wins [keys]atomic.Int32
	var failed atomic.Int32
	var wg sync.WaitGroup
	for k := range keys {
		for range offers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := s.Once(context.Background(), "key"+strconv.Itoa(k), until)
				if err != nil {
					failed.Add(1)
					return
				}
				if ok {
					wins[k].Add(1)
				}
			}()
		}
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d offers failed", n, keys*offers)
	}
	for k := range keys {
		if n := wins[k].Load(); n != 1 {
			t.Errorf("key%d won %d of %d concurrent offers, want exactly 1", k, n, offers)
		}
	}
}
