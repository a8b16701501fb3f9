package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// redisServer is a real redis-server of the run, empty and without persistence.
type redisServer struct {
	*proc
	addr   string
	client *redis.Client // the harness's own connection, for INFO
}

func (r *rig) startRedis(name string) (*redisServer, error) {
	port, err := r.freePort()
	if err != nil {
		return nil, err
	}
	p, err := r.start(name, nil, "redis-server",
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no",
		// The ws section holds 100k waiters: more clients than the default 10k limit is
		// not needed (instances share pooled connections), but say so explicitly.
		"--maxclients", "10000")
	if err != nil {
		return nil, err
	}
	s := &redisServer{proc: p, addr: fmt.Sprintf("127.0.0.1:%d", port)}
	s.client = redis.NewClient(&redis.Options{Addr: s.addr})
	for {
		if err := s.client.Ping(r.ctx).Err(); err == nil {
			return s, nil
		}
		if !p.alive() {
			return nil, fmt.Errorf("redis-server exited at start:\n%s", p.log())
		}
		select {
		case <-r.ctx.Done():
			return nil, r.ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// commands reads INFO commandstats: scripts run (the store's round trips) and every
// command Redis ran (testredis.CountCommands).
func (s *redisServer) commands(ctx context.Context) (scripts, total int64, err error) {
	info, err := s.client.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, 0, err
	}
	scripts, total = testredis.CountCommands(info)
	return scripts, total, nil
}

// usedMemory is INFO memory's used_memory: what Redis holds for its data.
func (s *redisServer) usedMemory(ctx context.Context) (int64, error) {
	info, err := s.client.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("no used_memory in INFO memory")
}
