package waitingroom

import (
	"sync"
	"testing"
	"time"
)

// The touch cache answers "confirmed within touchEvery?" for exactly the visitors it
// was told about, forgets on request, and prune keeps exactly the entries confirmed
// since the cutoff, also after a shard's map is remade smaller.
func TestTouchCache(t *testing.T) {
	var c touchCache
	now := time.Unix(1_800_000_000, 0)
	old, fresh := make([]VisitorID, 3000), make([]VisitorID, 500)
	for i := range old {
		old[i] = NewVisitorID()
		c.mark(old[i], now)
	}
	later := now.Add(time.Hour)
	for i := range fresh {
		fresh[i] = NewVisitorID()
		c.mark(fresh[i], later)
	}
	if !c.recent(old[0], now.Add(touchEvery-time.Nanosecond)) || c.recent(old[0], now.Add(touchEvery)) {
		t.Fatal("recent must hold for touchEvery after a mark, and no longer")
	}
	if c.recent(NewVisitorID(), now) {
		t.Fatal("a visitor never marked is recent")
	}
	c.forget(fresh[0])
	if c.recent(fresh[0], later) {
		t.Fatal("a forgotten visitor is still recent")
	}

	c.prune(later.UnixNano()) // every shard lost about six in seven entries: remade
	if n := c.len(); n != len(fresh)-1 {
		t.Fatalf("%d entries after pruning, want %d", n, len(fresh)-1)
	}
	for _, id := range fresh[1:] {
		if !c.recent(id, later) {
			t.Fatal("prune dropped an entry confirmed at the cutoff")
		}
	}
	for _, id := range old {
		if c.recent(id, now) {
			t.Fatal("prune kept an entry confirmed before the cutoff")
		}
	}
	c.mark(old[0], later) // a remade shard takes new entries
	if !c.recent(old[0], later) {
		t.Fatal("a mark after pruning was lost")
	}
	c.clear()
	if n := c.len(); n != 0 || c.recent(old[0], later) {
		t.Fatalf("%d entries after clear", n)
	}
}

// Requests mark and read the cache while the room's loop prunes it (run with -race).
func TestTouchCacheConcurrent(t *testing.T) {
	var c touchCache
	now := time.Unix(1_800_000_000, 0)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 2000 {
				id := NewVisitorID()
				c.mark(id, now)
				if !c.recent(id, now) {
					t.Error("a visitor just marked is not recent")
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			c.prune(now.UnixNano()) // keeps everything marked at now
		}
	})
	wg.Wait()
	if n := c.len(); n != 8*2000 {
		t.Fatalf("%d entries, want %d", n, 8*2000)
	}
}
