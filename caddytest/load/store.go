package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"

	"github.com/caddy-waitingroom/caddy-waitingroom/waitingroom"
	"github.com/caddy-waitingroom/caddy-waitingroom/waitingroom/memorystore"
	"github.com/caddy-waitingroom/caddy-waitingroom/waitingroom/redisstore"
)

// The store section measures the stores in this process, through the same Caddy
// modules a room provisions (MemoryStore and redisstore.Redis, opened with OpenStore),
// so the figures are the plugin's own code, client settings and join batching, not a
// copy; Redis is a real redis-server of the run. In-process rather than `go test
// -bench` subprocesses: the harness decides the concurrency, interleaves the stores
// with their baselines round by round, and checks the stores' counters after every
// round, none of which the benchmarks' output would let it do.
func init() {
	register(section{
		name:  "store",
		about: "joins per second and how join and position costs grow with the queue, in-process through the store modules",
		order: 10,
		run:   runStore,
	})
}

// storeLimits fill a room at once: one visitor holds the only slot for the whole run
// and everyone after is queued, and nobody expires.
var storeLimits = queue.Limits{Capacity: 1, SessionTTL: time.Hour, QueueTTL: time.Hour}

// storeScale is how much the section does; -quick shrinks it to a smoke run.
type storeScale struct {
	memoryJoins int           // new visitors per round of the memory throughput figure
	redisJoins  int           // the same on Redis, and a tenth of it for one joiner
	sizes       []int         // queue lengths of the growth figures, smallest first
	memoryTime  time.Duration // least time measured per growth figure and round, memory
	redisTime   time.Duration // the same on Redis
}

func scaleFor(o options) storeScale {
	if o.quick {
		return storeScale{memoryJoins: 20_000, redisJoins: 2_000, sizes: []int{100, 1_000},
			memoryTime: 5 * time.Millisecond, redisTime: 20 * time.Millisecond}
	}
	return storeScale{memoryJoins: 500_000, redisJoins: 100_000, sizes: []int{1_000, 10_000, 100_000},
		memoryTime: 50 * time.Millisecond, redisTime: 300 * time.Millisecond}
}

// joiners is the concurrency of the throughput figures: many more goroutines than
// cores, as a busy instance has requests in flight.
func joiners() int { return runtime.GOMAXPROCS(0) * 64 }

// storeKind is one store module, provisioned as a room would provision it.
type storeKind struct {
	name  string
	mod   waitingroom.StoreModule
	ctx   caddy.Context
	redis *redisServer // nil for the memory store
	rooms atomic.Int64
}

// open opens a fresh room (a name of its own) of the store.
func (k *storeKind) open() (queue.Store, func(), error) {
	return k.mod.OpenStore(k.ctx, fmt.Sprintf("load-%d", k.rooms.Add(1)))
}

func runStore(ctx context.Context, r *rig, o options) ([]row, error) {
	cctx, cancel := caddy.NewContext(caddy.Context{Context: ctx})
	defer cancel()
	srv, err := r.startRedis("store-redis")
	if err != nil {
		return nil, err
	}
	rmod := &redisstore.Redis{URL: "redis://" + srv.addr}
	if err := rmod.Provision(cctx); err != nil {
		return nil, err
	}
	// The store itself is measured here, in memory: its saves to disk are the durable
	// section's (durable.go), and a room kept on disk would come back in the next run.
	memory := &storeKind{name: "memory", mod: &memorystore.MemoryStore{File: "off"}, ctx: cctx}
	rds := &storeKind{name: "Redis", mod: rmod, ctx: cctx, redis: srv}
	// A room held open for the whole section keeps the pooled Redis client (and its
	// warm connections) alive between the rooms that come and go.
	_, release, err := rds.open()
	if err != nil {
		return nil, err
	}
	defer release()

	sc := scaleFor(o)
	rows, err := joinThroughput(ctx, r, sc, memory, rds)
	if err != nil {
		return rows, err
	}
	growth, err := costGrowth(ctx, r, sc, memory, rds)
	return append(rows, growth...), err
}

// joinThroughput is the joins per second of many concurrent joiners, each store beside
// the same loop with the store call replaced by its floor: an insert into a locked map
// for the memory store, an INCR on the same Redis with the same client settings for
// Redis. Rounds interleave the six loops; medians are reported.
func joinThroughput(ctx context.Context, r *rig, sc storeScale, memory, rds *storeKind) ([]row, error) {
	incr := redis.NewClient(&redis.Options{Addr: rds.redis.addr, ReadTimeout: time.Second,
		WriteTimeout: time.Second, PoolTimeout: time.Second, ContextTimeoutEnabled: true})
	defer incr.Close()
	incrOp := func(ctx context.Context, _ queue.VisitorID, _ time.Time) error {
		return incr.Incr(ctx, "load:incr").Err()
	}
	n, many := sc.redisJoins, joiners()
	var memJoins, memFloor, redisJoins, redisFloor, loneJoins, loneFloor, scripts []float64
	for range r.o.rounds {
		v, err := storeJoinRate(ctx, memory, sc.memoryJoins, many, nil)
		if err != nil {
			return nil, err
		}
		memJoins = append(memJoins, v)
		memFloor = append(memFloor, lockedMapRate(ctx, sc.memoryJoins, many))

		var evals float64
		v, err = storeJoinRate(ctx, rds, n, many, &evals)
		if err != nil {
			return nil, err
		}
		redisJoins, scripts = append(redisJoins, v), append(scripts, evals)
		if v, err = loopRate(ctx, n, many, incrOp); err != nil {
			return nil, err
		}
		redisFloor = append(redisFloor, v)

		if v, err = storeJoinRate(ctx, rds, n/10, 1, nil); err != nil {
			return nil, err
		}
		loneJoins = append(loneJoins, v)
		if v, err = loopRate(ctx, n/10, 1, incrOp); err != nil {
			return nil, err
		}
		loneFloor = append(loneFloor, v)
	}
	for _, s := range []struct {
		name    string
		samples []float64
	}{
		{"memory joins/s", memJoins}, {"locked map inserts/s", memFloor},
		{"Redis joins/s", redisJoins}, {"Redis INCR/s", redisFloor},
		{"Redis lone joins/s", loneJoins}, {"Redis lone INCR/s", loneFloor},
	} {
		fmt.Fprintf(os.Stderr, "   %-24s %s\n", s.name, strings.Join(nums(s.samples), ", "))
	}
	evals := median(scripts)
	return []row{
		floorRow(fmt.Sprintf("memory: joins/s, %d joiners, room full (vs inserts into a locked map)", many),
			memJoins, "joins/s", memFloor, "inserts/s", 50_000),
		floorRow(fmt.Sprintf("Redis: joins/s, %d joiners, room full (vs INCR, same client settings)", many),
			redisJoins, "joins/s", redisFloor, "INCR/s", 15_000),
		{figure: fmt.Sprintf("Redis: round trips (EVALSHA) per join, %d joiners (joins batched)", many),
			value: fmt.Sprintf("%.3f", evals), target: "≤ 1", verdict: verdict(evals <= 1)},
		floorRow("Redis: joins/s, one joiner at a time (vs INCR, one client)",
			loneJoins, "joins/s", loneFloor, "INCR/s", 0),
	}, nil
}

// storeJoinRate joins n new visitors into a fresh room of k from `joiners` goroutines
// and returns joins per second. The room must then hold exactly n visitors (one
// admitted, the rest queued). With evals, it also reports the script calls per join.
func storeJoinRate(ctx context.Context, k *storeKind, n, joiners int, evals *float64) (float64, error) {
	store, release, err := k.open()
	if err != nil {
		return 0, err
	}
	defer release()
	var scripts0 int64
	if evals != nil {
		if scripts0, _, err = k.redis.commands(ctx); err != nil {
			return 0, err
		}
	}
	rate, err := loopRate(ctx, n, joiners, func(ctx context.Context, id queue.VisitorID, now time.Time) error {
		_, err := store.Join(ctx, id, now, storeLimits)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", k.name, err)
	}
	if evals != nil {
		scripts1, _, err := k.redis.commands(ctx)
		if err != nil {
			return 0, err
		}
		*evals = float64(scripts1-scripts0) / float64(n)
	}
	st, err := store.Stats(ctx)
	if err != nil {
		return 0, err
	}
	if st.Active != 1 || st.Active+st.Waiting != n {
		return 0, fmt.Errorf("%s: %d joins left %d admitted and %d queued, want 1 and %d", k.name, n, st.Active, st.Waiting, n-1)
	}
	return rate, store.Reset(ctx) // frees Redis's memory for the next rounds
}

// lockedMapRate is the floor of a store in this process: the same loop, each new
// visitor inserted into a map under one mutex.
func lockedMapRate(ctx context.Context, n, joiners int) float64 {
	var mu sync.Mutex
	seen := make(map[queue.VisitorID]int64)
	rate, _ := loopRate(ctx, n, joiners, func(_ context.Context, id queue.VisitorID, now time.Time) error {
		mu.Lock()
		seen[id] = now.UnixNano()
		mu.Unlock()
		return nil
	})
	return rate
}

// loopRate runs op for n fresh visitor ids (minted as the handler mints them, at the
// time it reads) from `joiners` goroutines and returns calls per second.
func loopRate(ctx context.Context, n, joiners int, op func(context.Context, queue.VisitorID, time.Time) error) (float64, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, joiners)
	start := time.Now()
	for range joiners {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := op(ctx, queue.NewVisitorID(), time.Now()); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return float64(n) / elapsed.Seconds(), nil
}
