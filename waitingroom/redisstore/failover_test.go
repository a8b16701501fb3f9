package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// The master holding a room is killed; its replica takes over, and the room carries on
// with every place it had: the store answers again within seconds (no restart, no
// reload), the waiters keep their positions, and admissions resume.
func TestClusterFailoverKeepsTheRoom(t *testing.T) {
	cl := testredis.StartClusterWithReplicas(t)
	mod := provision(t, &Redis{Addresses: cl.Addrs, Timeout: caddy.Duration(2 * time.Second)})
	s := open(t, mod)
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	lim := queue.Limits{Capacity: 1, SessionTTL: time.Hour, QueueTTL: time.Hour}

	holder := queue.NewVisitorID()
	if st, err := s.Join(ctx, holder, now, lim); err != nil || st.State != queue.Admitted {
		t.Fatalf("holder: %+v %v", st, err)
	}
	waiters := make([]queue.VisitorID, 5)
	for i := range waiters {
		waiters[i] = queue.NewVisitorID()
		if st, err := s.Join(ctx, waiters[i], now, lim); err != nil || st.Position != i+1 {
			t.Fatalf("waiter %d: %+v %v", i+1, st, err)
		}
	}

	// Find the master that holds the room, make sure its replica has everything, kill it.
	var victim *testredis.Server
	for _, srv := range cl.Servers {
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
		role, _ := rdb.Do(ctx, "ROLE").Slice()
		n, _ := rdb.Exists(ctx, s.keys[0]).Result() // the queue key
		if len(role) > 0 && role[0] == "master" && n == 1 {
			if acked, err := rdb.Do(ctx, "WAIT", 1, 5000).Int(); err != nil || acked < 1 {
				t.Fatalf("replica did not acknowledge: %d %v", acked, err)
			}
			victim = srv
		}
		rdb.Close()
	}
	if victim == nil {
		t.Fatal("no master holds the room")
	}
	victim.Stop()
	killed := time.Now()

	deadline := killed.Add(30 * time.Second)
	for {
		_, err := s.Stats(ctx)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the room did not come back after the failover: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the room answered again %v after its master was killed", time.Since(killed).Round(10*time.Millisecond))

	for i, id := range waiters {
		st, err := s.Status(ctx, id, now)
		if err != nil || st.State != queue.Queued || st.Position != i+1 {
			t.Fatalf("after the failover waiter %d: %+v %v", i+1, st, err)
		}
	}
	if ok, err := s.Leave(ctx, holder); err != nil || !ok {
		t.Fatalf("holder leaving after the failover: %v %v", ok, err)
	}
	res, err := s.Step(ctx, now, lim)
	if err != nil || len(res.Admitted) != 1 || res.Admitted[0] != waiters[0] {
		t.Fatalf("step after the failover: %+v %v", res, err)
	}
	late := queue.NewVisitorID()
	if st, err := s.Join(ctx, late, now, lim); err != nil || st.State != queue.Queued || st.Position != 5 {
		t.Fatalf("a new visitor after the failover: %+v %v", st, err)
	}
}
