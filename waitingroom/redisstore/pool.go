package redisstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// clients pools Redis clients by connection settings, so a config reload (which
// provisions the new config before cleaning up the old) reuses the connections, and
// every room on the same Redis shares one client and one Pub/Sub connection per room.
var clients = caddy.NewUsagePool()

// sharedClient is a pooled Redis client and the Pub/Sub subscriptions on it.
type sharedClient struct {
	client redis.UniversalClient
	logger *zap.Logger

	mu    sync.Mutex
	rooms map[string]*fanout // by channel

	lastReload atomic.Int64 // unix nanoseconds of the last cluster topology reload
}

// clusterReloadEvery rate-limits the topology reloads that errors trigger.
const clusterReloadEvery = 500 * time.Millisecond

// noteError reacts to a failed call. On a Cluster, go-redis learns a new topology from
// MOVED replies, or every 60 s; a master that died answers nothing at all, so after a
// failover the client would keep dialing the dead node for up to a minute. Any error
// therefore asks for a reload of the slot map (at most every clusterReloadEvery).
func (c *sharedClient) noteError(err error) {
	cc, ok := c.client.(*redis.ClusterClient)
	if !ok || err == nil || errors.Is(err, redis.Nil) {
		return
	}
	now := time.Now().UnixNano()
	last := c.lastReload.Load()
	if now-last < int64(clusterReloadEvery) || !c.lastReload.CompareAndSwap(last, now) {
		return
	}
	cc.ReloadState(context.Background())
}

func newSharedClient(opts *redis.UniversalOptions, logger *zap.Logger) *sharedClient {
	return &sharedClient{
		client: redis.NewUniversalClient(opts),
		logger: logger,
		rooms:  map[string]*fanout{},
	}
}

// Destruct closes the client when the last room using it is released.
func (c *sharedClient) Destruct() error {
	c.mu.Lock()
	rooms := c.rooms
	c.rooms = map[string]*fanout{}
	c.mu.Unlock()
	for _, f := range rooms {
		_ = f.pubsub.Close()
	}
	return c.client.Close()
}

// fanout is one Redis subscription to a room's admissions, shared by every local
// subscriber of that room.
type fanout struct {
	pubsub *redis.PubSub
	subs   map[uint64]func([]queue.VisitorID)
	next   uint64
}

// subscribe adds fn to the room's fanout, subscribing in Redis for the first one. It
// waits (up to timeout) for Redis to confirm, so admissions made after Subscribe
// returns are not missed; when Redis is down it returns at once and go-redis keeps
// resubscribing in the background until Redis is back.
func (c *sharedClient) subscribe(channel string, timeout time.Duration, fn func([]queue.VisitorID)) func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.rooms[channel]
	if !ok {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		ps := c.client.Subscribe(ctx, channel)
		if _, err := ps.Receive(ctx); err != nil {
			c.logger.Warn("subscribing to admissions; retrying in the background",
				zap.String("channel", channel), zap.Error(err))
		}
		cancel()
		f = &fanout{pubsub: ps, subs: map[uint64]func([]queue.VisitorID){}}
		c.rooms[channel] = f
		go c.deliver(channel, f, ps.Channel(redis.WithChannelHealthCheckInterval(time.Second)))
	}
	key := f.next
	f.next++
	f.subs[key] = fn

	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			delete(f.subs, key)
			if len(f.subs) == 0 && c.rooms[channel] == f {
				delete(c.rooms, channel)
				_ = f.pubsub.Close()
			}
		})
	}
}

// deliver runs until the subscription is closed; go-redis reconnects and resubscribes
// by itself after an outage.
func (c *sharedClient) deliver(channel string, f *fanout, msgs <-chan *redis.Message) {
	var fns []func([]queue.VisitorID)
	for msg := range msgs {
		var id queue.VisitorID
		if len(msg.Payload)%len(id) != 0 {
			c.logger.Warn("ignoring malformed admission message", zap.String("channel", channel))
			continue
		}
		ids := make([]queue.VisitorID, 0, len(msg.Payload)/len(id))
		for p := msg.Payload; len(p) > 0; p = p[len(id):] {
			copy(id[:], p)
			ids = append(ids, id)
		}
		c.mu.Lock()
		fns = fns[:0]
		for _, fn := range f.subs {
			fns = append(fns, fn)
		}
		c.mu.Unlock()
		for _, fn := range fns {
			fn(ids)
		}
	}
}
