package caddytest

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestHandoffFloodIsBounded: one caddy process. A waiter asks for hand-off codes as
// fast as eight connections go (each code is a QR code drawn, a thousand times a
// poll's CPU). The instance gives out at most its burst (50) and 20 a second after
// it, bounded by the flood's own duration; every other answer is 429 with a
// Retry-After; and the waiter keeps its place.
func TestHandoffFloodIsBounded(t *testing.T) {
	room := uniqueRoom(t)
	f := startFleet(t, 1, func(int) string {
		return roomBlock(room, "/shop*", 1, "memory", "session_ttl 1h")
	})
	nd := f.nodes[0]
	holder, waiter := newGuest(), newGuest()
	if _, ok, err := holder.place(nd.base, "/shop"); err != nil || !ok {
		t.Fatalf("the first visitor was not admitted: %v", err)
	}
	if q, admitted, err := waiter.place(nd.base, "/shop"); err != nil || admitted || q.Position != 1 {
		t.Fatalf("the waiter: admitted=%v %+v %v, want queued at 1", admitted, q, err)
	}
	const requests = 300
	var codes, busy, other atomic.Int64
	var wg sync.WaitGroup
	next := atomic.Int64{}
	start := time.Now()
	for range 8 {
		wg.Go(func() {
			for next.Add(1) <= requests {
				req, _ := http.NewRequest(http.MethodGet, nd.base+"/shop", nil)
				req.Header.Set("Accept", "application/json")
				req.Header.Set("Waiting-Room-Handoff", "new")
				resp, err := waiter.client.Do(req)
				if err != nil {
					other.Add(1)
					continue
				}
				resp.Body.Close()
				switch {
				case resp.StatusCode == http.StatusOK:
					codes.Add(1)
				case resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "1":
					busy.Add(1)
				default:
					other.Add(1)
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	bound := 50 + int64(20*took.Seconds()) + 1
	t.Logf("%d codes, %d refused, in %v", codes.Load(), busy.Load(), took)
	if other.Load() != 0 || codes.Load()+busy.Load() != requests {
		t.Fatalf("%d codes, %d refused with Retry-After, %d other answers, of %d", codes.Load(), busy.Load(), other.Load(), requests)
	}
	if codes.Load() < 1 || codes.Load() > bound {
		t.Fatalf("%d codes in %v, want between 1 and %d (50 at once, 20 a second)", codes.Load(), took, bound)
	}
	if q, admitted, err := waiter.place(nd.base, "/shop"); err != nil || admitted || q.Position != 1 || q.Waiting != 1 {
		t.Fatalf("the waiter after the flood: admitted=%v %+v %v, want still first of 1", admitted, q, err)
	}
}
