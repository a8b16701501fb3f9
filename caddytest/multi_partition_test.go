package caddytest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// TestMultiPartition cuts one instance of three off Redis (a blackhole between it and
// Redis) while the other two keep it, with a full room that fails open and one that
// fails closed. The store never holds more than capacity. Under fail closed the cut-off
// instance admits nobody new: over-admission 0. Under fail open it lets new visitors
// through without a slot: that, and only that, is the over-admission, and it is
// measured. When the partition heals, the instance queues new visitors again.
func TestMultiPartition(t *testing.T) {
	srv := testredis.Start(t)
	cut := testredis.StartProxy(t, srv.Addr)
	open, closed := uniqueRoom(t), uniqueRoom(t)
	const capacity = 3
	store := func(addr string) string {
		return "redis redis://" + addr + " {\n\t\t\ttimeout 250ms\n\t\t\tdial_timeout 250ms\n\t\t}"
	}
	f := startFleet(t, 3, func(i int) string {
		addr := srv.Addr
		if i == 2 {
			addr = cut.Addr
		}
		return roomBlock(open, "/open*", capacity, store(addr), "fail open", "session_ttl 1m") +
			roomBlock(closed, "/closed*", capacity, store(addr), "fail closed", "session_ttl 1m")
	})
	a, b, c := f.nodes[0], f.nodes[1], f.nodes[2]
	rooms := []struct{ name, path, fail string }{{open, "/open", "open"}, {closed, "/closed", "closed"}}
	for _, r := range rooms {
		for range capacity {
			if _, ok, err := newGuest().place(a.base, r.path); err != nil || !ok {
				t.Fatalf("%s: filling the room: %v", r.fail, err)
			}
		}
	}
	rdb := newRedisClient(t, srv.Addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	cut.Blackhole()
	var (
		mu                  sync.Mutex
		errs                []string
		letThrough, refused = map[string]int{}, map[string]int{}
		queuedOnA, samples  atomic.Int64
		maxActive           = map[string]int64{}
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, fmt.Sprintf(format, args...))
	}
	var wg sync.WaitGroup
	for _, r := range rooms {
		// New visitors on the cut-off instance.
		wg.Go(func() {
			for ctx.Err() == nil {
				code, body, err := newGuest().get(c.base, r.path, "application/json")
				mu.Lock()
				switch {
				case err != nil:
					errs = append(errs, fmt.Sprintf("%s on %s: %v", r.fail, c.name, err))
				case code == http.StatusOK && strings.HasPrefix(body, "upstream "):
					letThrough[r.fail]++
				case code == http.StatusServiceUnavailable && isUnavailable(body):
					refused[r.fail]++
				default:
					errs = append(errs, fmt.Sprintf("%s on %s: %d %q", r.fail, c.name, code, body))
				}
				mu.Unlock()
			}
		})
		// New visitors on the instances that still reach Redis: the room is full.
		for _, nd := range []*node{a, b} {
			wg.Go(func() {
				for ctx.Err() == nil {
					if _, ok, err := newGuest().place(nd.base, r.path); err != nil || ok {
						fail("%s on %s: admitted=%v %v; want queued, the room is full", r.fail, nd.name, ok, err)
						return
					}
					queuedOnA.Add(1)
					time.Sleep(20 * time.Millisecond)
				}
			})
		}
		wg.Go(func() {
			for ctx.Err() == nil {
				n, err := rdb.ZCard(ctx, roomKey(r.name, "active")).Result()
				if err != nil {
					if ctx.Err() == nil {
						fail("active sampler: %v", err)
					}
					return
				}
				samples.Add(1)
				mu.Lock()
				maxActive[r.fail] = max(maxActive[r.fail], n)
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	time.Sleep(10 * 250 * time.Millisecond) // ten of c's store timeouts
	cancel()
	wg.Wait()
	cut.Forward()
	for _, e := range errs {
		t.Error(e)
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("during the partition: %s let through %v, refused %v; %d queued on the others; %d samples, active at most %v",
		c.name, letThrough, refused, queuedOnA.Load(), samples.Load(), maxActive)
	for _, r := range rooms {
		if maxActive[r.fail] > capacity {
			t.Errorf("fail %s: the store held %d active with capacity %d", r.fail, maxActive[r.fail], capacity)
		}
	}
	if letThrough["closed"] != 0 || refused["closed"] == 0 {
		t.Errorf("fail closed: %s let %d new visitors through (want 0) and refused %d (want some)", c.name, letThrough["closed"], refused["closed"])
	}
	if letThrough["open"] == 0 || refused["open"] != 0 {
		t.Errorf("fail open: %s let %d through (want all) and refused %d", c.name, letThrough["open"], refused["open"])
	}
	if samples.Load() < 20 || queuedOnA.Load() < 10 {
		t.Errorf("only %d samples and %d queued visitors on the others", samples.Load(), queuedOnA.Load())
	}
	// Healed: the cut-off instance queues new visitors again, behind the others.
	for _, r := range rooms {
		waitFor(t, "fail "+r.fail+": "+c.name+" queueing again", func() bool {
			_, ok, err := newGuest().place(c.base, r.path)
			return err == nil && !ok
		})
	}
	f.requireUp()
}
