package caddytest

import (
	"context"
	"encoding/hex"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// The tests' side of Redis. The redis-server processes (standalone and Cluster) are
// started by internal/testredis, shared with the store's own tests; here are the
// client and what the tests read of the store's keys and channel.

func newRedisClient(t testing.TB, addrs ...string) redis.UniversalClient {
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: addrs, PoolSize: 20})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// roomKey is a key of the room in Redis. The tests read the store directly for
// room-wide facts no single instance can tell (how many hold a slot right now); the
// layout is the store's (waitingroom/redisstore/scripts.go).
func roomKey(room, suffix string) string { return "waiting_room:{" + room + "}:" + suffix }

// admissionLog records, in order, the visitor ids the store announces as admitted from
// the queue (its Pub/Sub channel: each message is the ids of one admission step, in
// ticket order; steps run one at a time in Redis). A subscriber on loopback that keeps
// reading loses nothing, so this is the store's own record of admission order.
type admissionLog struct {
	mu  sync.Mutex
	ids []string
	ps  *redis.PubSub
}

func subscribeAdmissions(t testing.TB, rdb redis.UniversalClient, room string) *admissionLog {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventDeadline)
	defer cancel()
	ps := rdb.Subscribe(ctx, roomKey(room, "admitted"))
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatalf("subscribing to admissions: %v", err)
	}
	a := &admissionLog{ps: ps}
	ch := ps.Channel(redis.WithChannelSize(10000))
	go func() {
		for msg := range ch {
			a.mu.Lock()
			for p := msg.Payload; len(p) >= 16; p = p[16:] {
				a.ids = append(a.ids, p[:16])
			}
			a.mu.Unlock()
		}
	}()
	t.Cleanup(func() { ps.Close() })
	return a
}

func (a *admissionLog) snapshot() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.ids...)
}

func shortID(id string) string { return hex.EncodeToString([]byte(id))[:8] }
