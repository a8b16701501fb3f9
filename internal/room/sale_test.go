package room_test

import (
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue/storetest"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room/saletest"
)

// The hostile sale on the memory store: a fleet of rooms on one store is a fleet of
// instances on one shared store.
func TestSale(t *testing.T) {
	saletest.Run(t, func(t *testing.T, n int) []queue.Store {
		st := queue.NewMemoryStore()
		stores := make([]queue.Store, n)
		for i := range stores {
			stores[i] = st
		}
		return stores
	}, saletest.Budget{Kept: true, Seeds: 20})
}

// The hostile sale on a memory store restarted from its state file's body between
// every two store calls: every invariant of the sale holds across restarts.
func TestSaleRestarting(t *testing.T) {
	saletest.Run(t, func(t *testing.T, n int) []queue.Store {
		st := storetest.Restarting(t)
		stores := make([]queue.Store, n)
		for i := range stores {
			stores[i] = st
		}
		return stores
	}, saletest.Budget{Kept: true, Seeds: 10})
}
