package storetest_test

import (
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue/storetest"
)

// The memory store passes the suite (the Redis store runs it in its own package).
func TestMemoryStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) queue.Store { return queue.NewMemoryStore() })
}

// One memory store is one instance: the uses are counted under its lock.
func TestMemoryStorePassUses(t *testing.T) {
	storetest.RunPassUses(t, func(t *testing.T, n int) []queue.Store {
		s := queue.NewMemoryStore()
		stores := make([]queue.Store, n)
		for i := range stores {
			stores[i] = s
		}
		return stores
	})
}

// One memory store is one instance: the once-only key and the move are each under a
// lock.
func TestMemoryStoreHandoffOnce(t *testing.T) {
	storetest.RunHandoffOnce(t, func(t *testing.T, n int) []queue.Store {
		s := queue.NewMemoryStore()
		stores := make([]queue.Store, n)
		for i := range stores {
			stores[i] = s
		}
		return stores
	})
}
