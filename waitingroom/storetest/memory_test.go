package storetest_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-waitingroom/caddy-waitingroom/waitingroom"
	"github.com/caddy-waitingroom/caddy-waitingroom/waitingroom/storetest"
)

var rooms atomic.Int64

// The memory store passes the suite (the Redis store runs it in its own package).
func TestMemoryStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) waitingroom.Store {
		ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
		t.Cleanup(cancel)
		s, release, err := waitingroom.MemoryStore{}.OpenStore(ctx, fmt.Sprintf("conformance-%d", rooms.Add(1)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(release)
		return s
	})
}
