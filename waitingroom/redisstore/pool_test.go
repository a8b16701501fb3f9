package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// Two configs (as during a reload) on the same Redis share one client, which is closed
// only when the last room lets go of it.
func TestClientPooledAcrossConfigs(t *testing.T) {
	srv := testredis.Start(t)
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	oldCfg := provision(t, &Redis{URL: "redis://" + srv.Addr})
	newCfg := provision(t, &Redis{URL: "redis://" + srv.Addr})
	other := provision(t, &Redis{URL: "redis://" + srv.Addr, Timeout: caddy.Duration(2 * time.Second)})

	s1, release1, err := oldCfg.OpenStore(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	s2, release2, err := newCfg.OpenStore(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	s3, release3, err := other.OpenStore(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	defer release3()
	c1, c2, c3 := s1.(*roomStore).shared, s2.(*roomStore).shared, s3.(*roomStore).shared
	if c1 != c2 {
		t.Fatal("two configs with the same connection settings got two clients")
	}
	if c1 == c3 {
		t.Fatal("configs with different timeouts share a client")
	}

	release1()
	release1() // releasing twice lets go once
	if _, err := s2.Stats(ctx); err != nil {
		t.Fatalf("the client was closed while the new config still uses it: %v", err)
	}
	release2()
	if _, err := s2.Stats(ctx); !errors.Is(err, redis.ErrClosed) {
		t.Fatalf("after the last release Stats = %v, want the client closed", err)
	}
	if _, err := s3.Stats(ctx); err != nil {
		t.Fatalf("releasing one client closed another: %v", err)
	}
}
