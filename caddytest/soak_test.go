package caddytest

import (
	"context"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestSoak runs a steady sale against the in-process Caddy for a bounded time and
// samples goroutines and heap: after the warm-up they must not grow (no leak of
// goroutines, timers or WebSockets). It is opt-in, because it runs for minutes:
//
//	cd caddytest && WAITING_ROOM_SOAK=3m go test -run TestSoak -v -timeout 15m .
//
// Visitors arrive all the time; some leave the queue, some go silent (their tickets
// expire by queue_ttl), the others wait on a WebSocket, shop, and check out (revoke).
func TestSoak(t *testing.T) {
	spec := os.Getenv("WAITING_ROOM_SOAK")
	if spec == "" {
		t.Skip("soak test: set WAITING_ROOM_SOAK to a duration (at most 10m) to run it")
	}
	total, err := time.ParseDuration(spec)
	if err != nil || total <= 0 || total > 10*time.Minute {
		t.Fatalf("WAITING_ROOM_SOAK=%q: want a duration up to 10m", spec)
	}
	room := uniqueRoom(t)
	startLive(t, room, "capacity 20\n\t\tsession_ttl 3s\n\t\tqueue_ttl 4s")

	ctx, cancel := context.WithTimeout(context.Background(), total)
	defer cancel()
	var served, left, silent, failures atomic.Int64
	const workers = 40
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for ctx.Err() == nil {
				outcome, err := soakVisit(ctx, t, rng)
				switch {
				case err != nil:
					if ctx.Err() == nil {
						failures.Add(1)
					}
				case outcome == "left":
					left.Add(1)
				case outcome == "silent":
					silent.Add(1)
				default:
					served.Add(1)
				}
			}
		}()
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
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			samples = append(samples, sample{runtime.NumGoroutine(), m.HeapAlloc})
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
	t.Logf("%v: %d served, %d left, %d went silent, %d failed requests; goroutines peak %d then %d; heap peak %.1f MiB then %.1f MiB",
		total, served.Load(), left.Load(), silent.Load(), failures.Load(), g2, g3, float64(h2)/(1<<20), float64(h3)/(1<<20))
	if served.Load() == 0 {
		t.Fatal("nobody was served: the soak did not exercise the room")
	}
	// Steady load means steady resources: allow noise, not a trend.
	if g3 > g2+g2/5+20 {
		t.Errorf("goroutines grew after warm-up: %d -> %d", g2, g3)
	}
	if h3 > h2+h2/2+8<<20 {
		t.Errorf("heap grew after warm-up: %d -> %d bytes", h2, h3)
	}
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
