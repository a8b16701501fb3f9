package queue

import (
	"sync"
	"testing"
	"time"
)

// The touch cache answers "confirmed within TouchEvery?" for exactly the visitors it
// was told about, forgets on request, and prune keeps exactly the entries confirmed
// since the cutoff, also after a shard's map is remade smaller.
func TestTouchCache(t *testing.T) {
	var c TouchCache
	now := time.Unix(1_800_000_000, 0)
	old, fresh := make([]VisitorID, 3000), make([]VisitorID, 500)
	for i := range old {
		old[i] = NewVisitorID()
		c.Mark(old[i], now)
	}
	later := now.Add(time.Hour)
	for i := range fresh {
		fresh[i] = NewVisitorID()
		c.Mark(fresh[i], later)
	}
	if !c.Recent(old[0], now.Add(TouchEvery-time.Nanosecond)) || c.Recent(old[0], now.Add(TouchEvery)) {
		t.Fatal("recent must hold for TouchEvery after a mark, and no longer")
	}
	if c.Recent(NewVisitorID(), now) {
		t.Fatal("a visitor never marked is recent")
	}
	c.Forget(fresh[0])
	if c.Recent(fresh[0], later) {
		t.Fatal("a forgotten visitor is still recent")
	}

	c.Prune(later.UnixNano()) // every shard lost about six in seven entries: remade
	if n := c.Len(); n != len(fresh)-1 {
		t.Fatalf("%d entries after pruning, want %d", n, len(fresh)-1)
	}
	for _, id := range fresh[1:] {
		if !c.Recent(id, later) {
			t.Fatal("prune dropped an entry confirmed at the cutoff")
		}
	}
	for _, id := range old {
		if c.Recent(id, now) {
			t.Fatal("prune kept an entry confirmed before the cutoff")
		}
	}
	c.Mark(old[0], later) // a remade shard takes new entries
	if !c.Recent(old[0], later) {
		t.Fatal("a mark after pruning was lost")
	}
	c.Clear()
	if n := c.Len(); n != 0 || c.Recent(old[0], later) {
		t.Fatalf("%d entries after clear", n)
	}
}

// Requests mark and read the cache while the room's loop prunes it (run with -race).
func TestTouchCacheConcurrent(t *testing.T) {
	var c TouchCache
	now := time.Unix(1_800_000_000, 0)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 2000 {
				id := NewVisitorID()
				c.Mark(id, now)
				if !c.Recent(id, now) {
					t.Error("a visitor just marked is not recent")
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			c.Prune(now.UnixNano()) // keeps everything marked at now
		}
	})
	wg.Wait()
	if n := c.Len(); n != 8*2000 {
		t.Fatalf("%d entries, want %d", n, 8*2000)
	}
}
