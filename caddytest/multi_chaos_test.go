package caddytest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// TestMultiInstanceKilledUnderLoad: one of three instances is killed (SIGKILL) while
// visitors keep arriving on all three and waiters hold WebSockets on the one that
// dies. Its waiters reconnect to the others and keep their places (the same position,
// in the same order); capacity is never exceeded; the survivors stay up.
func TestMultiInstanceKilledUnderLoad(t *testing.T) {
	srv := testredis.Start(t)
	room := uniqueRoom(t)
	const capacity = 5
	f := startFleet(t, 3, func(int) string {
		return roomBlock(room, "/shop*", capacity, "redis redis://"+srv.Addr)
	})
	rdb := newRedisClient(t, srv.Addr)
	victim, a, b := f.nodes[0], f.nodes[1], f.nodes[2]

	for range capacity { // the slots are taken for the whole test
		if _, ok, err := newGuest().place(a.base, "/shop"); err != nil || !ok {
			t.Fatalf("filling the room: admitted=%v %v", ok, err)
		}
	}
	// Twenty waiters on the victim, each with its WebSocket there.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	waiters := make([]*guest, 20)
	for i := range waiters {
		waiters[i] = newGuest()
		q, ok, err := waiters[i].place(victim.base, "/shop")
		if err != nil || ok || q.Position != i+1 {
			t.Fatalf("waiter %d on the victim: admitted=%v position %d %v", i+1, ok, q.Position, err)
		}
		c, err := waiters[i].socket(ctx, victim.base, "/shop")
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		if _, err := readMessage(ctx, c); err != nil {
			t.Fatal(err)
		}
	}

	// Load on the survivors while the victim dies: new visitors join behind.
	var stop atomic.Bool
	var wg sync.WaitGroup
	var joined atomic.Int64
	for _, nd := range []*node{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if _, _, err := newGuest().place(nd.base, "/shop"); err == nil {
					joined.Add(1)
				}
			}
		}()
	}
	overCapacity := make(chan int64, 1)
	go func() {
		for !stop.Load() {
			if n, err := rdb.ZCard(context.Background(), roomKey(room, "active")).Result(); err == nil && n > capacity {
				select {
				case overCapacity <- n:
				default:
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	time.Sleep(200 * time.Millisecond)
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-victim.exited

	// Every waiter's socket on the victim ends; they come back on the survivors, in turn,
	// and find their places.
	for i, w := range waiters {
		nd := []*node{a, b}[i%2]
		c, err := w.socket(ctx, nd.base, "/shop")
		if err != nil {
			t.Fatalf("waiter %d reconnecting to %s: %v", i+1, nd.name, err)
		}
		m, err := readMessage(ctx, c)
		c.CloseNow()
		if err != nil || m.Position != i+1 {
			t.Fatalf("waiter %d reconnected to %s at position %d (%v), want %d", i+1, nd.name, m.Position, err, i+1)
		}
	}
	stop.Store(true)
	wg.Wait()
	select {
	case n := <-overCapacity:
		t.Fatalf("active reached %d with capacity %d", n, capacity)
	default:
	}
	t.Logf("%d visitors joined on the survivors meanwhile", joined.Load())
	// The victim's processes are gone; the survivors must still be up.
	f.nodes = []*node{a, b}
	f.requireUp()
}
