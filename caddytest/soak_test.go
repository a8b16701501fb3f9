package caddytest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestSoak runs a steady sale against the in-process Caddy and samples goroutines and
// heap: after the warm-up they must not grow (no leak of goroutines, timers or
// WebSockets), and no request may fail. It runs in CI for soakDefault; for longer:
//
//	cd caddytest && WAITING_ROOM_SOAK=10m go test -run TestSoak -v -timeout 15m .
//
// Visitors arrive all the time; some leave the queue, some go silent (away after
// queue_ttl, their places dropped at away_ttl, which is short here so that the places
// kept reach their steady number within the warm-up), the others wait on a WebSocket,
// shop, and check out (revoke).
//
// The tolerances are derived, not tuned. Before the soak, the test measures what one
// waiting visitor (queued, its WebSocket open) holds in this process, client and server
// side together: at any instant at most workers visitors are in flight, so steady load
// may differ between two samples by at most workers times that, and more than that is
// growth. A leak of one goroutine (or of one visitor's heap) per visit would pass that
// bound within a few hundred visits; a third of the soak serves thousands.
func TestSoak(t *testing.T) {
	total := soakDefault
	if spec := os.Getenv("WAITING_ROOM_SOAK"); spec != "" {
		var err error
		total, err = time.ParseDuration(spec)
		if err != nil || total <= 0 || total > 10*time.Minute {
			t.Fatalf("WAITING_ROOM_SOAK=%q: want a duration up to 10m", spec)
		}
	}
	room := uniqueRoom(t)
	const capacity, workers = 20, 40
	startLive(t, room, fmt.Sprintf("capacity %d\n\t\tsession_ttl 10s\n\t\tqueue_ttl 5s\n\t\taway_ttl 10s", capacity))
	perG, perHeap := waiterFootprint(t, capacity, workers)
	tolG, tolHeap := workers*perG, uint64(workers)*perHeap
	t.Logf("one waiting visitor holds %d goroutines and %d bytes of heap here: tolerances %d goroutines, %.1f MiB", perG, perHeap, tolG, float64(tolHeap)/(1<<20))

	ctx, cancel := context.WithTimeout(context.Background(), total)
	defer cancel()
	var served, left, silent, failures atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for ctx.Err() == nil {
				outcome, err := soakVisit(ctx, t, rng)
				switch {
				case err != nil:
					if ctx.Err() == nil {
						failures.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
					}
				case outcome == "left":
					left.Add(1)
				case outcome == "silent":
					silent.Add(1)
				default:
					served.Add(1)
				}
			}
		})
	}

	type sample struct {
		goroutines int
		heap       uint64
	}
	var samples []sample
	tick := time.NewTicker(total / 30)
	defer tick.Stop()
sampling:
	for {
		select {
		case <-ctx.Done():
			break sampling
		case <-tick.C:
			g, h := measure()
			samples = append(samples, sample{g, h})
		}
	}
	wg.Wait()
	if len(samples) < 10 {
		t.Fatalf("only %d samples", len(samples))
	}
	// Warm-up is the first third; compare the middle third with the last.
	third := len(samples) / 3
	peak := func(s []sample) (g int, h uint64) {
		for _, x := range s {
			g, h = max(g, x.goroutines), max(h, x.heap)
		}
		return
	}
	g2, h2 := peak(samples[third : 2*third])
	g3, h3 := peak(samples[2*third:])
	t.Logf("%v: %d served, %d left, %d went silent, %d failed requests; %d samples; goroutines peak %d then %d; heap peak %.1f MiB then %.1f MiB",
		total, served.Load(), left.Load(), silent.Load(), failures.Load(), len(samples), g2, g3, float64(h2)/(1<<20), float64(h3)/(1<<20))
	if n := failures.Load(); n > 0 {
		t.Errorf("%d requests failed, the first: %v", n, firstErr.Load())
	}
	if served.Load() < int64(10*workers) {
		t.Fatalf("only %d visitors served: the soak did not exercise the room", served.Load())
	}
	if g3 > g2+tolG {
		t.Errorf("goroutines grew after warm-up: %d -> %d, tolerance %d", g2, g3, tolG)
	}
	if h3 > h2+tolHeap {
		t.Errorf("heap grew after warm-up: %d -> %d bytes, tolerance %d", h2, h3, tolHeap)
	}
}

// soakDefault is how long the soak runs when WAITING_ROOM_SOAK does not say: CI's share.
const soakDefault = 2 * time.Minute

// measure collects garbage and reads the goroutines and the live heap.
func measure() (int, uint64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return runtime.NumGoroutine(), m.HeapAlloc
}

// waiterFootprint fills the room (capacity), then queues n visitors with their
// WebSockets open and returns what each holds in this process: goroutines and heap
// bytes (at least 1 of each). They leave again before it returns.
func waiterFootprint(t *testing.T, capacity, n int) (int, uint64) {
	for range capacity {
		if _, ok := newVisitor(t).place("/"); !ok {
			t.Fatal("filling the room: not admitted")
		}
	}
	g0, h0 := measure()
	sockets := make([]*websocket.Conn, n)
	for i := range sockets {
		v := newVisitor(t)
		if _, ok := v.place("/"); ok {
			t.Fatal("a visitor beyond capacity was admitted")
		}
		sockets[i] = v.socket("/")
		next(t, sockets[i])
	}
	g1, h1 := measure()
	for _, c := range sockets {
		_ = c.Write(context.Background(), websocket.MessageText, []byte(`{"type":"leave"}`))
		c.CloseNow()
	}
	perHeap := uint64(1)
	if h1 > h0 {
		perHeap = max(perHeap, (h1-h0)/uint64(n))
	}
	return max(1, (g1-g0+n-1)/n), perHeap
}

// soakVisit is one visitor's life: arrive; if queued, maybe leave or go silent, else
// wait on the WebSocket for admission; then shop and check out.
func soakVisit(ctx context.Context, t *testing.T, rng *rand.Rand) (string, error) {
	v := newVisitor(t)
	_, admitted, err := v.tryPlace("/")
	if err != nil {
		return "", err
	}
	if !admitted {
		r := rng.IntN(10)
		if r == 1 {
			return "silent", nil // never heard from again: the ticket expires
		}
		c, err := v.trySocket(ctx, "/")
		if err != nil {
			return "", err
		}
		defer c.CloseNow()
		if r == 0 {
			return "left", c.Write(ctx, websocket.MessageText, []byte(`{"type":"leave"}`))
		}
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				return "", err
			}
			if string(data) == `{"type":"admitted"}` {
				break
			}
		}
	}
	for range 3 {
		if _, _, _, err := v.tryGet("/shop", "text/html"); err != nil {
			return "", err
		}
	}
	_, _, _, err = v.tryGet("/checkout", "")
	return "served", err
}
