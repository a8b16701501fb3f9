package waitingroom

import (
	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/waitingroom/memorystore"
)

// StoreModule is implemented by the Caddy modules in the namespace
// http.handlers.waiting_room.stores (memory, redis). A module opens the store of one
// room; stores are pooled so that every handler of the same room in this process (and,
// for the memory store, the next config after a reload) shares one.
type StoreModule interface {
	// OpenStore returns the store of the named room and a release function that the
	// handler calls exactly once from Cleanup. It must not fail because a remote store
	// is unreachable: that is reported by the store's calls, and the handler degrades.
	OpenStore(ctx caddy.Context, room string) (store queue.Store, release func(), err error)
}

// The memory store is the default: the handler registers it whatever else is built in.
var _ StoreModule = (*memorystore.MemoryStore)(nil)
