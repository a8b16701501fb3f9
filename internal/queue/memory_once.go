package queue

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// maxOnceKeys bounds the memory store's once-only keys. Each costs about 100 bytes
// (the map entry, the key's text, its place in the expiry heap), so the bound is
// about 100 MiB, reached only by more than 3,000 accepted proofs a second for a whole
// challenge life (5 minutes). When it is reached, a new key makes way for the one
// nearest its instant (every challenge lives as long, so that is the oldest): refusing
// new keys instead would let a few clients that solve proofs fast lock every new
// visitor out. The cost is that the oldest forgotten proofs could be offered once
// more, each one as much work to find as a fresh proof, and only while still unexpired.
const maxOnceKeys = 1 << 20

// onceKeys remembers keys until their instants, and forgets each after it: the
// expiry heap keeps the next to go at its root, so every call sweeps only what is due.
type onceKeys struct {
	mu    sync.Mutex
	until map[string]int64 // key -> until, unix nanoseconds
	order onceHeap
	now   func() time.Time // time.Now; tests set their own
	bound int              // maxOnceKeys; tests set a smaller one
}

type onceEntry struct {
	key   string
	until int64
}

type onceHeap []onceEntry

func (h onceHeap) Len() int           { return len(h) }
func (h onceHeap) Less(i, j int) bool { return h[i].until < h[j].until }
func (h onceHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *onceHeap) Push(x any)        { *h = append(*h, x.(onceEntry)) }
func (h *onceHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

func (s *MemoryStore) Once(_ context.Context, key string, until time.Time) (bool, error) {
	return s.once.offer(key, until), nil
}

func (o *onceKeys) offer(key string, until time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now
	if o.now != nil {
		now = o.now
	}
	at := now().UnixNano()
	o.sweepLocked(at)
	u := until.UnixNano()
	if u <= at {
		return false
	}
	if _, seen := o.until[key]; seen {
		return false
	}
	bound := o.bound
	if bound <= 0 {
		bound = maxOnceKeys
	}
	for len(o.until) >= bound && len(o.order) > 0 {
		e := heap.Pop(&o.order).(onceEntry)
		delete(o.until, e.key)
	}
	if o.until == nil {
		o.until = make(map[string]int64)
	}
	o.until[key] = u
	heap.Push(&o.order, onceEntry{key: key, until: u})
	return true
}

// sweepLocked forgets the keys whose instants have passed.
func (o *onceKeys) sweepLocked(at int64) {
	for len(o.order) > 0 && o.order[0].until <= at {
		e := heap.Pop(&o.order).(onceEntry)
		delete(o.until, e.key)
	}
}

// len is how many keys are remembered.
func (o *onceKeys) len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.until)
}
