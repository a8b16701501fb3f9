package waitingroom

import (
	"sync"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

func init() {
	caddy.RegisterModule(MemoryStore{})
}

// MemoryStore is the embedded store, the default: the room's queue and active set live
// in this Caddy process and survive `caddy reload` (the new config takes over the old
// state). It serves one instance; a fleet of Caddys shares the redis store instead.
type MemoryStore struct{}

// memoryStores pools each room's state by room name across config reloads.
var memoryStores = caddy.NewUsagePool()

// CaddyModule returns the Caddy module information.
func (MemoryStore) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.waiting_room.stores.memory",
		New: func() caddy.Module { return new(MemoryStore) },
	}
}

// OpenStore returns the named room's state, created on first use.
func (MemoryStore) OpenStore(_ caddy.Context, room string) (queue.Store, func(), error) {
	v, _, err := memoryStores.LoadOrNew(room, func() (caddy.Destructor, error) {
		return queue.NewMemoryStore(), nil
	})
	if err != nil {
		return nil, nil, err
	}
	var once sync.Once
	release := func() { once.Do(func() { _, _ = memoryStores.Delete(room) }) }
	return v.(*queue.MemoryStore), release, nil
}

// UnmarshalCaddyfile sets up the store from Caddyfile tokens: `store memory` takes
// no arguments and no block.
func (*MemoryStore) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // store name
	if d.NextArg() {
		return d.ArgErr()
	}
	if d.NextBlock(d.Nesting()) {
		return d.Errf("the memory store takes no options, got %q", d.Val())
	}
	return nil
}

// Interface guards
var (
	_ StoreModule           = (*MemoryStore)(nil)
	_ caddyfile.Unmarshaler = (*MemoryStore)(nil)
	_ queue.Store           = (*queue.MemoryStore)(nil)
)
