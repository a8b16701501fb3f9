package redisstore

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue/storetest"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

var roomSeq atomic.Int64

// provision provisions a store module the way Caddy would.
func provision(t testing.TB, r *Redis) *Redis {
	t.Helper()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	if err := r.Provision(ctx); err != nil {
		t.Fatalf("Provision: %v", err)
	}
	if err := r.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return r
}

// open opens a fresh room (a new name) on r, released when the test ends.
func open(t testing.TB, r *Redis) *roomStore {
	t.Helper()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	s, release, err := r.OpenStore(ctx, fmt.Sprintf("room-%d", roomSeq.Add(1)))
	if err != nil {
		t.Fatalf("OpenStore: %v", err)
	}
	t.Cleanup(release)
	return s.(*roomStore)
}

func TestConformanceStandalone(t *testing.T) {
	srv := testredis.Start(t)
	mod := provision(t, &Redis{URL: "redis://" + srv.Addr, Timeout: caddy.Duration(5 * time.Second)})
	storetest.Run(t, func(t *testing.T) queue.Store { return open(t, mod) })
}

func TestConformanceCluster(t *testing.T) {
	cl := testredis.StartCluster(t)
	mod := provision(t, &Redis{Addresses: cl.Addrs, Timeout: caddy.Duration(5 * time.Second)})
	storetest.Run(t, func(t *testing.T) queue.Store { return open(t, mod) })
}

// The same suite through Redis Sentinel: the store asks the Sentinel where the master
// is (go-redis's failover client) and works against it.
func TestConformanceSentinel(t *testing.T) {
	sn := testredis.StartSentinel(t)
	mod := provision(t, &Redis{MasterName: sn.MasterName, Addresses: []string{sn.Addr}, Timeout: caddy.Duration(5 * time.Second)})
	storetest.Run(t, func(t *testing.T) queue.Store { return open(t, mod) })
	// The rooms live on the master the Sentinel named.
	if n, err := sn.Master.Do("DBSIZE"); err != nil || n == "0" {
		t.Fatalf("the master holds %s keys (%v): the store did not reach it through the Sentinel", n, err)
	}
}

// instancesOn makes n stores of one new room on mod's server, each with a client of
// its own, as n instances of Caddy have.
func instancesOn(mod *Redis) func(t *testing.T, n int) []queue.Store {
	return func(t *testing.T, n int) []queue.Store {
		room := fmt.Sprintf("room-%d", roomSeq.Add(1))
		stores := make([]queue.Store, n)
		for i := range stores {
			shared := newSharedClient(mod.settings.options(), zap.NewNop())
			t.Cleanup(func() { shared.client.Close() })
			stores[i] = newRoomStore(shared, mod.Prefix, room, mod.settings.timeout, time.Duration(mod.JoinWait))
		}
		return stores
	}
}

// A pass's uses are counted exactly once each by three instances, each with its own
// client, on one redis-server.
func TestPassUsesAcrossInstances(t *testing.T) {
	srv := testredis.Start(t)
	mod := provision(t, &Redis{URL: "redis://" + srv.Addr, Timeout: caddy.Duration(5 * time.Second)})
	storetest.RunPassUses(t, instancesOn(mod))
}

// A hand-off code is used once and its place moved once by three instances, each
// with its own client, on one redis-server.
func TestHandoffOnceAcrossInstances(t *testing.T) {
	srv := testredis.Start(t)
	mod := provision(t, &Redis{URL: "redis://" + srv.Addr, Timeout: caddy.Duration(5 * time.Second)})
	storetest.RunHandoffOnce(t, instancesOn(mod))
}
