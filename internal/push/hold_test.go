package push

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// holdingStore is a memory store that is also a queue.Holder, recording what the hub
// asks of it. (The store behind a Holder is tested for real on Redis, in
// waitingroom/redisstore and caddytest; here it is the hub's side.)
type holdingStore struct {
	*queue.MemoryStore
	mu         sync.Mutex
	held       map[queue.VisitorID]bool
	renewals   int
	heartbeats int
}

func (s *holdingStore) Hold(_ context.Context, ids []queue.VisitorID, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.renewals++
	for _, id := range ids {
		s.held[id] = true
	}
	return nil
}

func (s *holdingStore) Release(_ context.Context, ids []queue.VisitorID, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		delete(s.held, id)
	}
	return nil
}

func (s *holdingStore) Heartbeat(ctx context.Context, ids []queue.VisitorID, now time.Time) error {
	s.mu.Lock()
	s.heartbeats++
	s.mu.Unlock()
	return s.MemoryStore.Heartbeat(ctx, ids, now)
}

func (s *holdingStore) snapshot() (held []queue.VisitorID, renewals, heartbeats int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range s.held {
		held = append(held, id)
	}
	slices.SortFunc(held, func(a, b queue.VisitorID) int { return slices.Compare(a[:], b[:]) })
	return held, s.renewals, s.heartbeats
}

// With a Holder store the hub holds each connected waiter once, lets go of it when its
// last socket closes, renews its lease while it holds anyone, and hears of nobody one
// by one.
func TestHubHoldsConnectedWaiters(t *testing.T) {
	tr := newRoom(t, 1, false)
	hs := &holdingStore{MemoryStore: tr.store, held: map[queue.VisitorID]bool{}}
	tr.hub = New(tr, hs, 300*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); tr.hub.Run(ctx) }()
	t.Cleanup(func() { cancel(); tr.hub.CloseAll(); <-done })
	srv := serveRoom(t, tr, nil)

	tr.join() // the only slot
	dctx, dcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer dcancel()
	var ids []queue.VisitorID
	var conns []*websocket.Conn
	for range 3 {
		cookie := tr.join()
		ids = append(ids, visitorID(t, cookie))
		c := dialWaiter(dctx, t, tr, srv, cookie)
		defer c.CloseNow()
		readView(dctx, t, c)
		conns = append(conns, c)
	}
	sorted := slices.Clone(ids)
	slices.SortFunc(sorted, func(a, b queue.VisitorID) int { return slices.Compare(a[:], b[:]) })
	waitUntil(t, "the three waiters held", func() bool {
		held, _, _ := hs.snapshot()
		return slices.Equal(held, sorted)
	})
	_, before, _ := hs.snapshot()
	waitUntil(t, "the lease renewed twice more", func() bool {
		_, n, _ := hs.snapshot()
		return n >= before+2
	})

	// A second tab of the first waiter opens, then its first tab closes: still held.
	// The only socket of the second waiter closes: let go.
	second := dialWaiter(dctx, t, tr, srv, ids[0].String())
	defer second.CloseNow()
	readView(dctx, t, second)
	conns[0].Close(websocket.StatusNormalClosure, "")
	conns[1].Close(websocket.StatusNormalClosure, "")
	waitUntil(t, "the waiter whose last socket closed let go", func() bool {
		held, _, _ := hs.snapshot()
		return len(held) == 2 && slices.Contains(held, ids[0]) && slices.Contains(held, ids[2])
	})
	if _, _, beats := hs.snapshot(); beats != 0 {
		t.Fatalf("the hub heard of waiters one by one %d times; with a Holder it holds them", beats)
	}
}

// waitUntil polls cond until it holds, failing after a generous bound (the hub's rounds
// run every half second).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}
