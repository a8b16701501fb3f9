package caddytest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// A `caddy reload` in the middle of a surge loses no waiter: every open waiting
// WebSocket closes with 1012 (reconnect), every waiter still has its place (its
// position can only have improved), the new settings apply, and capacity was never
// exceeded by the old and new config running side by side.
func TestLiveReloadUnderLoad(t *testing.T) {
	room := uniqueRoom(t)
	startLive(t, room, "capacity 3")
	for range 3 {
		newVisitor(t).place("/")
	}
	const n = 20
	waiters := make([]*visitor, n)
	sockets := make([]*websocket.Conn, n)
	for i := range waiters {
		waiters[i] = newVisitor(t)
		if q, _ := waiters[i].place("/"); q.Position != i+1 {
			t.Fatalf("waiter %d at %d", i+1, q.Position)
		}
		sockets[i] = waiters[i].socket("/")
		next(t, sockets[i])
	}

	// New visitors keep arriving through the reload.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var arrived, failed atomic.Int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if _, _, err := newVisitor(t).tryPlace("/"); err != nil {
					failed.Add(1)
				} else {
					arrived.Add(1)
				}
			}
		}()
	}
	var maxActive atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			// Not admin(): it fails the test from this goroutine, and the admin endpoint
			// itself is replaced during the reload.
			if resp, err := http.Get(adminBase + "/waiting_room/" + room); err == nil {
				var info roomObject
				if resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&info) == nil {
					for {
						m := maxActive.Load()
						if int64(info.Active) <= m || maxActive.CompareAndSwap(m, int64(info.Active)) {
							break
						}
					}
				}
				resp.Body.Close()
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	time.Sleep(300 * time.Millisecond)
	startLive(t, room, "capacity 3\n\t\tstatus_code 202")
	time.Sleep(300 * time.Millisecond)
	cancel()
	wg.Wait()

	for i, c := range sockets {
		rctx, rcancel := context.WithTimeout(context.Background(), 15*time.Second)
		var err error
		for err == nil {
			_, _, err = c.Read(rctx) // positions sent before the reload, then the close
		}
		rcancel()
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.StatusServiceRestart {
			t.Fatalf("waiter %d's socket ended with %v, want 1012", i+1, err)
		}
	}
	for i, v := range waiters {
		q, admitted := v.place("/")
		if admitted || q.Position < 1 || q.Position > i+1 {
			t.Fatalf("after the reload waiter %d: admitted=%v position %d, want still queued at %d or better", i+1, admitted, q.Position, i+1)
		}
		// It reconnects to the new config and is told the same place.
		c := v.socket("/")
		if m := next(t, c); m.Position != q.Position {
			t.Fatalf("waiter %d reconnected at %d, polled %d", i+1, m.Position, q.Position)
		}
	}
	if m := maxActive.Load(); m > 3 {
		t.Fatalf("active reached %d with capacity 3 during the reload", m)
	}
	t.Logf("%d visitors arrived during the reload, %d requests failed", arrived.Load(), failed.Load())
	if failed.Load() != 0 {
		t.Fatalf("%d requests failed across the reload", failed.Load())
	}
}
