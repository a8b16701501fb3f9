package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"

	"github.com/redis/go-redis/v9"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// redisUsage is what a server has run and spent so far, read before and after the
// operations a benchmark measures.
type redisUsage struct {
	scripts, total int64
	cpu            time.Duration
}

func usageOf(b *testing.B, srv *testredis.Server) redisUsage {
	scripts, total := srv.Commands(b)
	return redisUsage{scripts, total, srv.CPU(b)}
}

// reportCommands reports the round trips, commands and Redis CPU time per operation
// since u0. The CPU time is the figure a fleet's one Redis runs out of first, and the
// one a busy machine moves least.
func reportCommands(b *testing.B, srv *testredis.Server, u0 redisUsage, unit string) {
	u := usageOf(b, srv)
	b.ReportMetric(float64(u.scripts-u0.scripts)/float64(b.N), "evalsha/"+unit)
	b.ReportMetric(float64(u.total-u0.total)/float64(b.N), "redis_cmds/"+unit)
	b.ReportMetric(float64((u.cpu-u0.cpu).Microseconds())/float64(b.N), "redis_cpu_µs/"+unit)
}

var benchLimits = queue.Limits{Capacity: 1, SessionTTL: time.Hour, QueueTTL: time.Hour}

func benchStore(b *testing.B) (*testredis.Server, *roomStore) {
	srv := testredis.Start(b)
	s := open(b, provision(b, &Redis{URL: "redis://" + srv.Addr}))
	// Load the scripts, so EVALSHA is what is measured.
	if _, err := s.Join(context.Background(), queue.NewVisitorID(), time.Now(), benchLimits); err != nil {
		b.Fatal(err)
	}
	return srv, s
}

// BenchmarkJoin measures new visitors queued one after another (each Join one round
// trip) and the Redis commands each costs.
func BenchmarkJoin(b *testing.B) {
	srv, s := benchStore(b)
	benchJoins(b, srv, s)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "joins/s")
}

// benchJoins joins b.N new visitors one after another and reports the commands each cost.
func benchJoins(b *testing.B, srv *testredis.Server, s *roomStore) {
	ctx, now := context.Background(), time.Now()
	u0 := usageOf(b, srv)
	b.ResetTimer()
	for range b.N {
		if _, err := s.Join(ctx, queue.NewVisitorID(), now, benchLimits); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportCommands(b, srv, u0, "join")
}

// BenchmarkJoinParallel is BenchmarkJoin from many goroutines, as a busy instance.
func BenchmarkJoinParallel(b *testing.B) {
	srv, s := benchStore(b)
	ctx, now := context.Background(), time.Now()
	u0 := usageOf(b, srv)
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Join(ctx, queue.NewVisitorID(), now, benchLimits); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	reportCommands(b, srv, u0, "join")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "joins/s")
}

// BenchmarkJoinQueued is BenchmarkJoin behind a queue of 1k and 100k waiters: the cost
// must not grow with the queue.
func BenchmarkJoinQueued(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("queued=%d", n), func(b *testing.B) {
			srv, s := benchStore(b)
			_, _ = fillQueue(b, s, n)
			benchJoins(b, srv, s)
		})
	}
}

// fillQueue queues n waiters quickly (pipelined join scripts of maxJoinBatch visitors
// each, as the store's join batching sends them) and returns them and their tickets.
func fillQueue(b testing.TB, s *roomStore, n int) ([]queue.VisitorID, []uint64) {
	b.Helper()
	ctx, now := context.Background(), time.Now().UnixMilli()
	ids := make([]queue.VisitorID, 0, n)
	tickets := make([]uint64, 0, n)
	for len(tickets) < n {
		pipe := s.shared.client.Pipeline()
		var batches [][]queue.VisitorID
		for left := n - len(tickets); left > 0 && len(batches) < 8; left -= maxJoinBatch {
			batch := make([]queue.VisitorID, min(maxJoinBatch, left))
			args := append([]any{0}, joinArgs(benchLimits, len(batch))...) // 0: no deadline (deadline.go)
			for i := range batch {
				batch[i] = queue.NewVisitorID()
				args = append(args, batch[i][:], now)
			}
			joinScript.EvalSha(ctx, pipe, s.keys, args...)
			batches = append(batches, batch)
		}
		cmds, err := pipe.Exec(ctx)
		if err != nil {
			b.Fatalf("filling the queue: %v", err)
		}
		for i, c := range cmds {
			res, err := c.(*redis.Cmd).Int64Slice()
			if err != nil || len(res) != statusReply*len(batches[i]) {
				b.Fatalf("filling the queue: reply %v for %d visitors: %v", res, len(batches[i]), err)
			}
			for j, id := range batches[i] {
				if res[statusReply*j] == int64(queue.Queued) {
					ids = append(ids, id)
					tickets = append(tickets, uint64(res[statusReply*j+1]))
				}
			}
		}
	}
	return ids, tickets
}

// BenchmarkPositions computes the positions of every waiter of a queue with departures
// from the middle (one in ten left), as the WebSocket hub does on each tick.
func BenchmarkPositions(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("queued=%d", n), func(b *testing.B) {
			srv, s := benchStore(b)
			ids, tickets := fillQueue(b, s, n)
			ctx := context.Background()
			for i := 0; i < len(ids); i += 10 {
				if _, err := s.Leave(ctx, ids[i]); err != nil {
					b.Fatal(err)
				}
			}
			out := make([]int, len(tickets))
			u0 := usageOf(b, srv)
			b.ResetTimer()
			for range b.N {
				if err := s.Positions(ctx, tickets, out); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			reportCommands(b, srv, u0, "call")
			if out[len(out)-1] != n-(n+9)/10 {
				b.Fatalf("last waiter at %d, want %d", out[len(out)-1], n-(n+9)/10)
			}
		})
	}
}

// BenchmarkQueueMemory fills a room with 100k waiters and reports the Redis memory each
// costs (INFO used_memory before and after, and MEMORY USAGE of the room's keys).
func BenchmarkQueueMemory(b *testing.B) {
	const n = 100_000
	srv, s := benchStore(b)
	used := func() int64 {
		info, err := srv.Do("INFO", "memory")
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		b.Fatal("no used_memory in INFO memory")
		return 0
	}
	before := used()
	_, _ = fillQueue(b, s, n)
	after := used()
	var keys int64
	for _, k := range s.keys {
		v, err := srv.Do("MEMORY", "USAGE", k, "SAMPLES", "0")
		if err != nil {
			b.Fatal(err)
		}
		size, _ := strconv.ParseInt(v, 10, 64)
		keys += size
	}
	for range b.N {
	}
	b.ReportMetric(float64(after-before)/n, "used_memory_B/waiter")
	b.ReportMetric(float64(keys)/n, "key_B/waiter")
}
