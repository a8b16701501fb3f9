package caddytest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// hangTimeout is the rooms' store timeout in the hang tests; what they assert about
// time is a ratio to it or to queue.TouchEvery.
const hangTimeout = 250 * time.Millisecond

// TestMultiRedisHangs hangs the fleet's Redis instead of refusing: SIGSTOP of the real
// redis-server, and a loopback proxy that stops forwarding (a blackhole). Each case has
// four rooms: fail open and fail closed, each with a free slot (a join would be
// admitted) and full with one waiter (a join would be queued). For longer than two
// throttle windows:
//   - admitted visitors pass, and wait for the store at most once per window;
//   - new visitors and the waiter get the configured answer within a small multiple of
//     the timeout;
//
// and afterwards no place or slot exists for a call answered as failed, the goroutines
// are back to where they were, and the room works again by itself.
func TestMultiRedisHangs(t *testing.T) {
	cases := map[string]func(t *testing.T, srv *testredis.Server) (addr string, hang, resume func()){
		"sigstop": func(t *testing.T, srv *testredis.Server) (string, func(), func()) {
			return srv.Addr, srv.Pause, srv.Resume
		},
		"blackhole": func(t *testing.T, srv *testredis.Server) (string, func(), func()) {
			p := testredis.StartProxy(t, srv.Addr)
			return p.Addr, p.Blackhole, p.Forward
		},
	}
	for name, fault := range cases {
		t.Run(name, func(t *testing.T) {
			srv := testredis.Start(t)
			addr, hang, resume := fault(t, srv)
			runHang(t, srv, addr, hang, resume)
		})
	}
}

type hangRoom struct {
	name, path, fail string
	free             bool // a slot is free (else full, with one waiter)
	inside, waiter   *guest
}

func runHang(t *testing.T, srv *testredis.Server, addr string, hang, resume func()) {
	store := fmt.Sprintf("redis redis://%s {\n\t\t\ttimeout %v\n\t\t\tdial_timeout %v\n\t\t}", addr, hangTimeout, hangTimeout)
	var rooms []*hangRoom
	for _, fail := range []string{"open", "closed"} {
		for _, free := range []bool{true, false} {
			name := uniqueRoom(t)
			rooms = append(rooms, &hangRoom{name: name, path: "/" + name, fail: fail, free: free})
		}
	}
	f := startFleet(t, 1, func(int) string {
		var b strings.Builder
		for _, r := range rooms {
			capacity := 1
			if r.free {
				capacity = 2
			}
			b.WriteString(roomBlock(r.name, r.path+"*", capacity, store, "fail "+r.fail, "session_ttl 1m"))
		}
		return b.String()
	})
	nd := f.nodes[0]
	for _, r := range rooms {
		r.inside = newGuest()
		if _, ok, err := r.inside.place(nd.base, r.path); err != nil || !ok {
			t.Fatalf("%s: first visitor not admitted: %v", r.name, err)
		}
		if !r.free {
			r.waiter = newGuest()
			if q, ok, err := r.waiter.place(nd.base, r.path); err != nil || ok || q.Position != 1 {
				t.Fatalf("%s: waiter: admitted=%v %+v %v", r.name, ok, q, err)
			}
		}
	}
	rdb := newRedisClient(t, srv.Addr) // straight to Redis, past any proxy
	want := map[string][2]int64{}      // active, waiting
	for _, r := range rooms {
		want[r.name] = roomCounts(t, rdb, r.name)
	}
	before := goroutines(t, nd)

	hang()
	hung := time.Now()
	// Long enough for every admitted visitor's session check to fall due twice.
	hangFor := 2*queue.TouchEvery + queue.TouchEvery/2
	var (
		mu       sync.Mutex
		failures []string
		samples  = map[string]int{}
		waited   = map[string]int{}
		slowest  time.Duration // of the answers to new visitors and waiters
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 20 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	var wg sync.WaitGroup
	for _, r := range rooms {
		// The admitted visitor, request after request.
		wg.Go(func() {
			for time.Since(hung) < hangFor {
				start := time.Now()
				_, ok, err := r.inside.place(nd.base, r.path+"/page")
				took := time.Since(start)
				if err != nil || !ok {
					fail("%s: admitted visitor not let through during the hang: %v", r.name, err)
					return
				}
				mu.Lock()
				samples["admitted"]++
				if took >= hangTimeout/2 {
					waited[r.name]++
				}
				mu.Unlock()
				time.Sleep(hangTimeout / 25) // a visitor clicking on, not a benchmark
			}
		})
		// New visitors, and the waiter, each answered as fail says.
		wg.Go(func() {
			for time.Since(hung) < hangFor {
				visitors := []*guest{newGuest()}
				if r.waiter != nil {
					visitors = append(visitors, r.waiter)
				}
				for _, g := range visitors {
					start := time.Now()
					code, body, err := g.get(nd.base, r.path, "application/json")
					took := time.Since(start)
					switch {
					case err != nil:
						fail("%s: %v", r.name, err)
						return
					case r.fail == "open" && (code != http.StatusOK || !strings.HasPrefix(body, "upstream ")):
						fail("%s (fail open): got %d %q during the hang, want let through", r.name, code, body)
						return
					case r.fail == "closed" && (code != http.StatusServiceUnavailable || !isUnavailable(body)):
						fail("%s (fail closed): got %d %q during the hang, want 503 unavailable", r.name, code, body)
						return
					}
					mu.Lock()
					samples["new or queued"]++
					slowest = max(slowest, took)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	during := goroutines(t, nd)
	elapsed := time.Since(hung)
	resume()
	for _, msg := range failures {
		t.Error(msg)
	}
	if t.Failed() {
		t.FailNow()
	}

	// Every request waits at most one timeout, so hangFor holds at least this many.
	minSamples := int(hangFor / (3 * hangTimeout))
	for kind, n := range samples {
		if n < minSamples*len(rooms)/2 {
			t.Errorf("only %d %s requests during the hang, want at least %d", n, kind, minSamples*len(rooms)/2)
		}
	}
	windows := int(elapsed/queue.TouchEvery) + 1
	for _, r := range rooms {
		t.Logf("%s (fail %s, free %v): %d admitted requests waited for the store", r.name, r.fail, r.free, waited[r.name])
		if waited[r.name] > windows {
			t.Errorf("%s: the admitted visitor waited for the store %d times in %d throttle windows", r.name, waited[r.name], windows)
		}
	}
	if ratio := float64(slowest) / float64(hangTimeout); ratio > 3 {
		t.Errorf("a new visitor or waiter waited %.2f timeouts for the answer, want at most 3", ratio)
	}
	t.Logf("%v samples; slowest answer to a new visitor or waiter %.2f timeouts; goroutines %d before, %d during",
		samples, float64(slowest)/float64(hangTimeout), before, during)

	// Recovery: the waiter hears its place again, through the instance.
	var attempts int
	for _, r := range rooms {
		if r.waiter == nil || r.fail != "closed" {
			continue
		}
		waitFor(t, "the room answering again", func() bool {
			attempts++
			q, ok, err := r.waiter.place(nd.base, r.path)
			return err == nil && !ok && q.Position == 1
		})
	}
	t.Logf("the instance answered the waiter again after %d attempts", attempts)
	// Nothing was left behind by the calls answered as failed: the same visitors hold
	// the same slots and places as before the hang.
	for _, r := range rooms {
		if got := roomCounts(t, rdb, r.name); got != want[r.name] {
			t.Errorf("%s (fail %s, free %v): (active, waiting) = %v after the hang, %v before: a place or slot nobody holds",
				r.name, r.fail, r.free, got, want[r.name])
		}
	}
	// And the room works: a new visitor takes the free slot, and the next one queues.
	for _, r := range rooms {
		if !r.free {
			continue
		}
		if _, ok, err := newGuest().place(nd.base, r.path); err != nil || !ok {
			t.Errorf("%s: new visitor after the hang not admitted to the free slot: %v", r.name, err)
		}
		if q, ok, err := newGuest().place(nd.base, r.path); err != nil || ok || q.Position != 1 {
			t.Errorf("%s: next visitor after the hang: admitted=%v %+v %v; want queued at 1", r.name, ok, q, err)
		}
	}
	// The goroutines of the hung requests are gone again. Idle client connections
	// hold one each: the samplers held at most two per room.
	slack := 2 * len(rooms)
	after := 0
	waitFor(t, "goroutines to settle", func() bool {
		after = goroutines(t, nd)
		return after <= before+slack
	})
	t.Logf("goroutines %d before, %d after (slack %d)", before, after, slack)
	f.requireUp()
}

// roomCounts reads (active, waiting) of a room from Redis.
func roomCounts(t *testing.T, rdb redis.UniversalClient, room string) [2]int64 {
	t.Helper()
	ctx := context.Background()
	active, err1 := rdb.ZCard(ctx, roomKey(room, "active")).Result()
	waiting, err2 := rdb.ZCard(ctx, roomKey(room, "queue")).Result()
	if err1 != nil || err2 != nil {
		t.Fatalf("reading room %s from redis: %v %v", room, err1, err2)
	}
	return [2]int64{active, waiting}
}
