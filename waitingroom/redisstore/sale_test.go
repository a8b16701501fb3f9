package redisstore

import (
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room/saletest"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// The hostile sale on a real Redis: each instance of the fleet has its own client,
// as each Caddy has.
func TestSaleStandalone(t *testing.T) {
	srv := testredis.Start(t)
	mod := provision(t, &Redis{URL: "redis://" + srv.Addr, Timeout: caddy.Duration(5 * time.Second)})
	saletest.Run(t, instancesOn(mod), saletest.Budget{Kept: true, Seeds: 2})
}

// The same on a three-master Cluster, where every room's keys share one slot: two
// random seeds (the kept ones replay on standalone and on the memory store).
func TestSaleCluster(t *testing.T) {
	cl := testredis.StartCluster(t)
	mod := provision(t, &Redis{Addresses: cl.Addrs, Timeout: caddy.Duration(5 * time.Second)})
	saletest.Run(t, instancesOn(mod), saletest.Budget{Seeds: 2})
}
