//go:build linux

package push

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// An idle socket waits in the hub's idle watch with no reader (idle.go), over plain
// TCP and over TLS; a client that speaks after a while is still heard: a ping,
// messages, one longer than a read buffer, and a leave, which gives up the place.
func TestIdleSocketsWaitInTheWatch(t *testing.T) {
	for _, transport := range []string{"tcp", "tls"} {
		t.Run(transport, func(t *testing.T) {
			tr := newTestRoom(t, 1)
			tr.join()
			cookie := tr.join()
			srv := httptest.NewUnstartedServer(serveRoom(t, tr, nil).Config.Handler)
			if transport == "tls" {
				srv.StartTLS()
			} else {
				srv.Start()
			}
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c := dialWaiter(ctx, t, tr, srv, cookie)
			defer c.CloseNow()
			go func() { // the client reads in the background: positions, and the pongs Ping awaits
				for {
					if _, _, err := c.Read(ctx); err != nil {
						return
					}
				}
			}()
			parked := func(what string) { t.Helper(); awaitParked(t, tr, 1, what) }
			parked("after the upgrade")
			// A control frame is answered inside the library's read, which goes on
			// reading: the reader is back to waiting after the next message.
			if err := c.Ping(ctx); err != nil {
				t.Fatalf("ping: %v", err)
			}
			for i := range 3 {
				if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"note"}`)); err != nil {
					t.Fatal(err)
				}
				parked(fmt.Sprintf("after message %d", i))
			}
			big := `{"type":"note","pad":"` + strings.Repeat("x", 3*maxClientMessage/4) + `"}`
			if err := c.Write(ctx, websocket.MessageText, []byte(big)); err != nil {
				t.Fatal(err)
			}
			parked("after a long message")
			if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"leave"}`)); err != nil {
				t.Fatal(err)
			}
			id := visitorID(t, cookie)
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				st, err := tr.store.Status(ctx, id, tr.Now())
				if err != nil {
					t.Fatal(err)
				}
				if st.State == queue.Unknown {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the leave after a while was not heard: the waiter is %v", st.State)
				}
			}
		})
	}
}

// Two messages in one segment: the library's read takes the first and leaves the second
// in the reader's buffer, where the descriptor's readiness cannot see it. The reader
// must read it without waiting for more (here it is a leave, which gives up the place).
func TestSecondMessageOfASegmentIsRead(t *testing.T) {
	tr := newTestRoom(t, 1)
	tr.join()
	cookie := tr.join()
	srv := serveRoom(t, tr, nil)
	conn := rawUpgrade(t, srv, cookie, nil)
	defer conn.Close()
	awaitParked(t, tr, 1, "after the upgrade")
	segment := append(maskedText(`{"type":"note"}`), maskedText(`{"type":"leave"}`)...)
	if _, err := conn.Write(segment); err != nil { // one write: both frames arrive together
		t.Fatal(err)
	}
	awaitLeft(t, tr, cookie, "the second message of the segment was not read")
}

// An idle waiter keeps no stack, over plain TCP or over TLS: no goroutine waits for
// its client (idle.go). Measured as the stacks in use, after collections, with
// waiters against without; a reader parked in its read would be 2 KiB a waiter, 4 KiB
// over TLS. The waiters connect once before, so that the goroutines their upgrades
// ran on are dead and kept for reuse, with their stacks, both times.
func TestIdleWaitersKeepNoStack(t *testing.T) {
	const waiters = 200
	for _, transport := range []string{"tcp", "tls"} {
		tr := newTestRoom(t, 1)
		tr.join()
		var cookies []string
		for range waiters {
			cookies = append(cookies, tr.join())
		}
		srv := httptest.NewUnstartedServer(serveRoom(t, tr, nil).Config.Handler)
		if transport == "tls" {
			srv.StartTLS()
		} else {
			srv.Start()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		srv.Client() // its transport's own goroutines are not the waiters'
		connect := func() []*websocket.Conn {
			var conns []*websocket.Conn
			for _, cookie := range cookies {
				c := dialWaiter(ctx, t, tr, srv, cookie)
				readView(ctx, t, c)
				conns = append(conns, c)
			}
			// Only the watch is asked: the stacks are what this test measures.
			waitUntil(t, transport+": every socket parked", func() bool {
				return tr.hub.idle.parkedCount() == waiters && serverGoroutines("(*Hub).Serve") == 0
			})
			return conns
		}
		gone := func(what string) {
			waitUntil(t, transport+": every socket let go "+what, func() bool {
				tr.hub.mu.Lock()
				defer tr.hub.mu.Unlock()
				return len(tr.hub.waiters) == 0 && serverGoroutines("(*socket).read") == 0
			})
		}
		for _, c := range connect() {
			c.CloseNow()
		}
		gone("after the first connections went")
		before := stacksInUse()
		conns := connect()
		perWaiter := (float64(leastStacksInUse()) - float64(before)) / waiters
		t.Logf("%s: %.0f B of stacks per idle waiter (server and client)", transport, perWaiter)
		// The watch's one goroutine, spread over the waiters, is 10 B each; a
		// reader's smallest stack would be 2 KiB.
		if perWaiter > 512 {
			t.Errorf("an idle %s waiter keeps %.0f B of stacks: something waits for each", transport, perWaiter)
		}
		for _, c := range conns {
			c.CloseNow()
		}
		gone("after the clients went")
		cancel()
		srv.Close()
	}
}

// parkedCount is how many sockets wait in the watch.
func (w *idleWatch) parkedCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.parked)
}

// A parked socket whose connection this side closes (the waiter admitted, or the room
// closing) is let go of, though its client stays silent: a closed descriptor leaves
// the epoll set without an event, so no reader would come to find it over. The hub
// forgets it, its release is called once, and once the hub is closed and empty, the
// watch's goroutine ends.
func TestParkedSocketClosedFromThisSideIsLetGo(t *testing.T) {
	for _, transport := range []string{"tcp", "tls"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			tr := newTestRoom(t, 1)
			tr.join()
			admitted, closed := tr.join(), tr.join()
			var released atomic.Int64
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ck, _ := r.Cookie(cookieName)
				id := visitorID(t, ck.Value)
				st, err := tr.store.Status(r.Context(), id, tr.Now())
				if err != nil {
					t.Error(err)
					return
				}
				_ = tr.hub.Serve(w, r, id, st, func() { released.Add(1) })
			}))
			if transport == "tls" {
				srv.StartTLS()
			} else {
				srv.Start()
			}
			defer srv.Close()
			for _, cookie := range []string{admitted, closed} {
				conn := silentUpgrade(t, srv, cookie)
				defer conn.Close()
			}
			awaitParked(t, tr, 2, "after the upgrades")

			tr.hub.admitted([]queue.VisitorID{visitorID(t, admitted)})
			waitUntil(t, "the admitted waiter's socket let go of", func() bool {
				tr.hub.mu.Lock()
				defer tr.hub.mu.Unlock()
				return tr.hub.waiters[visitorID(t, admitted)] == nil && released.Load() == 1
			})
			tr.hub.CloseAll()
			waitUntil(t, "the last socket let go of, and the watch ended, as the hub closed", func() bool {
				tr.hub.mu.Lock()
				defer tr.hub.mu.Unlock()
				return len(tr.hub.waiters) == 0 && released.Load() == 2 && serverGoroutines("(*idleWatch).watch") == 0
			})
			if n := serverGoroutines("(*socket)."); n != 0 {
				t.Errorf("%d goroutines of the sockets left", n)
			}
			time.Sleep(100 * time.Millisecond)
			if n := released.Load(); n != 2 {
				t.Errorf("two sockets released %d times", n)
			}
		})
	}
}

// silentUpgrade opens the waiting WebSocket of the waiter whose room cookie is cookie,
// over TLS when srv was started with it, by hand, and returns the connection once the
// upgrade is answered: a client that then reads and writes nothing.
func silentUpgrade(t *testing.T, srv *httptest.Server, cookie string) net.Conn {
	t.Helper()
	host := srv.Listener.Addr().String()
	var conn net.Conn
	var err error
	if srv.TLS != nil {
		conn, err = tls.Dial("tcp", host, &tls.Config{InsecureSkipVerify: true}) // the test server's own certificate
	} else {
		conn, err = net.Dial("tcp", host)
	}
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	request := fmt.Sprintf("GET / HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: %s\r\n"+
		"Cookie: %s=%s\r\n\r\n", host, Subprotocol, cookieName, cookie)
	if _, err := conn.Write([]byte(request)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	return conn
}

// stacksInUse is the goroutine stacks' memory in use after two collections (the
// second frees what the first found unused in the stacks' pools).
// leastStacksInUse is the least of a few readings of stacksInUse a moment apart: a
// goroutine that waits for each waiter is in every reading, while a push round's
// writers, which a busy machine may catch in one, come and go.
func leastStacksInUse() uint64 {
	least := stacksInUse()
	for range 4 {
		time.Sleep(100 * time.Millisecond)
		least = min(least, stacksInUse())
	}
	return least
}

func stacksInUse() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.StackInuse
}
