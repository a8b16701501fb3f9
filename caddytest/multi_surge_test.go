package caddytest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/redis/go-redis/v9"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// TestMultiSurgeStandalone: 600 new visitors arrive at once, spread over three Caddy
// instances sharing one Redis, at a room of capacity 50. The room never holds more than
// 50 at any sample, everybody gets in, and the waiters get in in the order of their
// tickets.
func TestMultiSurgeStandalone(t *testing.T) {
	srv := testredis.Start(t)
	room := uniqueRoom(t)
	f := startFleet(t, 3, func(int) string {
		return roomBlock(room, "/shop*", 50, "redis redis://"+srv.Addr, "session_ttl 1m")
	})
	runSurge(t, f, newRedisClient(t, srv.Addr), room, 600, 50)
	f.requireUp()
}

// TestMultiCluster runs the surge and the moving waiter on a three-master Redis
// Cluster: a room's keys share one hash slot, its admissions are published
// cluster-wide.
func TestMultiCluster(t *testing.T) {
	cl := testredis.StartCluster(t)
	surge, move, across := uniqueRoom(t), uniqueRoom(t), uniqueRoom(t)
	store := "redis {\n\t\t\taddresses " + strings.Join(cl.Addrs, " ") + "\n\t\t}"
	f := startFleet(t, 3, func(int) string {
		return roomBlock(surge, "/shop*", 20, store, "session_ttl 1m") +
			roomBlock(move, "/move*", 1, store) +
			roomBlock(across, "/across*", 1, store)
	})
	rdb := newRedisClient(t, cl.Addrs...)
	t.Run("surge", func(t *testing.T) { runSurge(t, f, rdb, surge, 200, 20) })
	t.Run("move", func(t *testing.T) { runMove(t, f, rdb, move, "/move") })
	t.Run("admitted on another instance", func(t *testing.T) { runAdmittedAcross(t, f, "/across") })
	f.requireUp()
}

// runSurge sends visitors new visitors at once to the fleet, visitor i to instance
// i%n, and lets each through the shop: a waiter waits on its WebSocket for "admitted";
// an admitted visitor browses on the next instance (its cookie from the first), then
// checks out on the one after, where the upstream's revoke frees the slot.
//
// The admitted visitors hold their slots until every join has been answered, so the
// queue is complete before the first admission from it. That makes the positions the
// waiters are told at join exactly their ranks by ticket (1..visitors-capacity: a
// permutation, whatever the interleaving of the instances), which is what the
// admission order is checked against.
//
// Checked: active (ZCARD of the room's active set, sampled all along, and the number of
// visitors seen inside and not yet leaving, counted by the clients) never exceeds
// capacity; exactly capacity visitors are admitted at join; everybody gets in; the
// store announces every waiter's admission once, in ticket order.
func runSurge(t *testing.T, f *fleet, rdb redis.UniversalClient, room string, visitors, capacity int) {
	t.Helper()
	ctx := context.Background()
	admissions := subscribeAdmissions(t, rdb, room)
	n := len(f.nodes)

	type record struct {
		id       string
		atJoin   bool // admitted at once
		position int  // told at join, when queued
	}
	records := make([]record, visitors)
	errs := make(chan error, visitors)
	var inside, maxInside atomic.Int64 // client side: seen inside, not yet leaving
	var joined, finished sync.WaitGroup
	joined.Add(visitors)
	finished.Add(visitors)
	allJoined := make(chan struct{})
	go func() { joined.Wait(); close(allJoined) }()

	// The sampler reads the room-wide active count from Redis as fast as it can.
	stopSampling := make(chan struct{})
	var samples, maxActive atomic.Int64
	var sampling sync.WaitGroup
	sampling.Add(1)
	go func() {
		defer sampling.Done()
		for {
			select {
			case <-stopSampling:
				return
			default:
			}
			a, err := rdb.ZCard(ctx, roomKey(room, "active")).Result()
			if err != nil {
				errs <- fmt.Errorf("sampling active: %w", err)
				return
			}
			samples.Add(1)
			for m := maxActive.Load(); a > m && !maxActive.CompareAndSwap(m, a); m = maxActive.Load() {
			}
		}
	}()

	start := make(chan struct{})
	began := time.Now()
	var admitLatencies sync.Map // waiter index -> time from first slot freeing to admitted
	var releaseAt atomic.Int64
	for i := range visitors {
		go func() {
			defer finished.Done()
			g := newGuest()
			home, next, last := f.nodes[i%n], f.nodes[(i+1)%n], f.nodes[(i+2)%n]
			<-start
			q, admitted, err := g.place(home.base, "/shop")
			var id string
			if err == nil {
				id, err = g.visitorID(home.base, room)
			}
			records[i] = record{id: id, atJoin: admitted, position: q.Position}
			joined.Done()
			if err != nil {
				errs <- fmt.Errorf("visitor %d joining on %s: %w", i, home.name, err)
				return
			}
			if admitted {
				<-allJoined
				releaseAt.CompareAndSwap(0, time.Now().UnixNano())
			} else {
				ws, err := g.socket(ctx, home.base, "/shop")
				if err != nil {
					errs <- fmt.Errorf("waiter %d: %w", i, err)
					return
				}
				err = awaitAdmitted(ctx, ws)
				ws.Close(websocket.StatusNormalClosure, "")
				if err != nil {
					errs <- fmt.Errorf("waiter %d (position %d at join) on %s: %w", i, q.Position, home.name, err)
					return
				}
				admitLatencies.Store(i, time.Since(time.Unix(0, releaseAt.Load())))
			}
			// Browse on the next instance with the cookie the first one set.
			if _, ok, err := g.place(next.base, "/shop/cart"); err != nil || !ok {
				errs <- fmt.Errorf("visitor %d admitted but stopped on %s: %v", i, next.name, err)
				return
			}
			now := inside.Add(1)
			for m := maxInside.Load(); now > m && !maxInside.CompareAndSwap(m, now); m = maxInside.Load() {
			}
			time.Sleep(time.Duration(10+rand.IntN(30)) * time.Millisecond) // hold the slot a moment
			inside.Add(-1)
			// Check out on the third instance: the upstream revokes the session.
			if code, body, err := g.get(last.base, "/shop/done", ""); err != nil || body != "done" {
				errs <- fmt.Errorf("visitor %d checking out on %s: %d %q %v", i, last.name, code, body, err)
			}
		}()
	}
	close(start)
	finished.Wait()
	elapsed := time.Since(began)
	close(stopSampling)
	sampling.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if failed++; failed <= 10 {
			t.Error(err)
		}
	}
	if failed > 0 {
		t.Fatalf("%d visitors failed", failed)
	}

	t.Logf("%d visitors through capacity %d on %d instances in %v; %d samples of active, max %d; max seen inside by clients %d",
		visitors, capacity, n, elapsed.Round(time.Millisecond), samples.Load(), maxActive.Load(), maxInside.Load())
	if samples.Load() < 20 {
		t.Errorf("only %d samples of active were taken", samples.Load())
	}
	if maxActive.Load() > int64(capacity) {
		t.Errorf("active reached %d in Redis, capacity is %d", maxActive.Load(), capacity)
	}
	if maxInside.Load() > int64(capacity) {
		t.Errorf("%d visitors were inside at once, capacity is %d", maxInside.Load(), capacity)
	}
	var lat []time.Duration
	admitLatencies.Range(func(_, v any) bool { lat = append(lat, v.(time.Duration)); return true })
	slices.Sort(lat)
	if len(lat) > 0 {
		t.Logf("waiters admitted after the first slot freed: first %v, median %v, last %v",
			lat[0].Round(time.Millisecond), lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
	}

	// Exactly capacity were admitted at join; the waiters' positions are their ranks.
	queued := visitors - capacity
	positionOf := map[string]int{}
	atJoin := map[string]bool{}
	var positions []int
	for _, r := range records {
		if r.atJoin {
			atJoin[r.id] = true
			continue
		}
		positionOf[r.id] = r.position
		positions = append(positions, r.position)
	}
	if len(atJoin) != capacity {
		t.Fatalf("%d visitors were admitted at join, capacity is %d", len(atJoin), capacity)
	}
	slices.Sort(positions)
	for i, p := range positions {
		if p != i+1 {
			t.Fatalf("positions told at join are not 1..%d: %v", queued, positions)
		}
	}

	// Every waiter's admission was announced once, in ticket order.
	waitFor(t, "every admission announced", func() bool { return len(admissions.snapshot()) >= queued })
	order := admissions.snapshot()
	if len(order) != queued {
		t.Fatalf("%d admissions announced, %d waiters", len(order), queued)
	}
	seen := map[string]bool{}
	prev := 0
	for k, id := range order {
		p, ok := positionOf[id]
		switch {
		case atJoin[id]:
			t.Fatalf("admission %d: %s was admitted at join and again from the queue", k, shortID(id))
		case !ok:
			t.Fatalf("admission %d: %s is nobody's visitor id", k, shortID(id))
		case seen[id]:
			t.Fatalf("admission %d: %s admitted twice", k, shortID(id))
		case p < prev:
			t.Fatalf("admission %d: the waiter told position %d was admitted after the one told %d (not FIFO)", k, p, prev)
		}
		seen[id] = true
		prev = p
	}

	// Everybody checked out: nothing is left in the room.
	for _, key := range []string{"active", "queue"} {
		if c, err := rdb.ZCard(ctx, roomKey(room, key)).Result(); err != nil || c != 0 {
			t.Errorf("after everyone checked out, %s holds %d (%v)", key, c, err)
		}
	}
}
