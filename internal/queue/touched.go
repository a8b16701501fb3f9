package queue

import (
	"sync"
	"time"
)

// TouchCache remembers when this instance last confirmed each admitted visitor's
// session with the store, so that within TouchEvery an admitted request costs a cookie
// check and a map read, not a store round trip.
//
// It holds an entry for every admitted visitor of a busy room, so it is built for the
// garbage collector as much as for speed: maps of a fixed-size key to a number hold no
// pointers, so the collector never scans them, and an entry allocates nothing. The
// maps are sharded by visitor id (random, minted by the server) so that concurrent
// requests rarely share a lock. (A sync.Map boxes every key and value: three
// allocations per new visitor, and pointers the collector marks for as long as the
// visitor stays admitted.)
type TouchCache struct {
	shards [touchShards]touchShard
}

const touchShards = 64

// TouchEvery throttles the store touch of an admitted visitor: within it, a request
// costs a cookie check only.
const TouchEvery = 5 * time.Second

type touchShard struct {
	mu sync.RWMutex
	at map[VisitorID]int64 // unix nanoseconds of the last confirmation
	// peak is the most entries since the map was last made: Go maps keep their
	// storage when entries go, so Prune remakes a map that shrank to a quarter.
	peak int
}

func (c *TouchCache) shard(id VisitorID) *touchShard { return &c.shards[id[0]%touchShards] }

// Recent reports whether id was confirmed within TouchEvery of now.
func (c *TouchCache) Recent(id VisitorID, now time.Time) bool {
	s := c.shard(id)
	s.mu.RLock()
	at, ok := s.at[id]
	s.mu.RUnlock()
	return ok && now.UnixNano()-at < int64(TouchEvery)
}

// Mark records that id was confirmed at now.
func (c *TouchCache) Mark(id VisitorID, now time.Time) {
	s := c.shard(id)
	s.mu.Lock()
	if s.at == nil {
		s.at = make(map[VisitorID]int64)
	}
	s.at[id] = now.UnixNano()
	s.peak = max(s.peak, len(s.at))
	s.mu.Unlock()
}

// At reports the time recorded for id, if any.
func (c *TouchCache) At(id VisitorID) (time.Time, bool) {
	s := c.shard(id)
	s.mu.RLock()
	at, ok := s.at[id]
	s.mu.RUnlock()
	return time.Unix(0, at), ok
}

// Forget drops id, so that id's next request asks the store again.
func (c *TouchCache) Forget(id VisitorID) {
	s := c.shard(id)
	s.mu.Lock()
	delete(s.at, id)
	s.mu.Unlock()
}

// Prune drops the entries confirmed before cutoff (unix nanoseconds).
func (c *TouchCache) Prune(cutoff int64) {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for id, at := range s.at {
			if at < cutoff {
				delete(s.at, id)
			}
		}
		if len(s.at) < s.peak/4 {
			s.at, s.peak = compacted(s.at), len(s.at)
		}
		s.mu.Unlock()
	}
}

// Clear drops every entry, so that every admitted visitor's next request asks the
// store again.
func (c *TouchCache) Clear() {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		s.at, s.peak = nil, 0
		s.mu.Unlock()
	}
}

// Len counts the entries (for tests).
func (c *TouchCache) Len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		n += len(s.at)
		s.mu.RUnlock()
	}
	return n
}

// compacted copies m into a map sized for its entries.
func compacted(m map[VisitorID]int64) map[VisitorID]int64 {
	out := make(map[VisitorID]int64, len(m))
	for id, at := range m {
		out[id] = at
	}
	return out
}
