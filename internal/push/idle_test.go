//go:build linux

package push

import (
	"context"
	"fmt"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// An idle reader waits on its descriptor, outside the library's read (idle.go), over
// plain TCP and over TLS; a client that speaks after a while is still heard: a ping,
// messages, one longer than a read buffer, and a leave, which gives up the place.
func TestIdleReadersWaitOutsideTheRead(t *testing.T) {
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
			parked := func(what string) {
				t.Helper()
				for deadline := time.Now().Add(10 * time.Second); serverGoroutines("awaitReadable") != 1; time.Sleep(5 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("%s: the reader is not waiting in awaitReadable (%d readers there, %d in read)",
							what, serverGoroutines("awaitReadable"), serverGoroutines("(*socket).read"))
					}
				}
			}
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
	for deadline := time.Now().Add(10 * time.Second); serverGoroutines("awaitReadable") != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the reader never waited in awaitReadable")
		}
	}
	segment := append(maskedText(`{"type":"note"}`), maskedText(`{"type":"leave"}`)...)
	if _, err := conn.Write(segment); err != nil { // one write: both frames arrive together
		t.Fatal(err)
	}
	awaitLeft(t, tr, cookie, "the second message of the segment was not read")
}

// An idle reader over TLS keeps a stack no larger than one over plain TCP. The look at
// what crypto/tls holds goes through its read path, which grows a stack to 4 KiB, and
// a parked goroutine's stack of 4 KiB is never shrunk back; so the first look is taken
// by the upgrade's goroutine, which ends, and not by the reader. Measured as the
// stacks in use, after collections, with waiters against without, for each transport.
func TestIdleTLSReadersKeepThePlainReadersStack(t *testing.T) {
	const waiters = 200
	perWaiter := map[string]float64{}
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
		before := stacksInUse()
		var conns []*websocket.Conn
		for _, cookie := range cookies {
			c := dialWaiter(ctx, t, tr, srv, cookie)
			readView(ctx, t, c)
			conns = append(conns, c)
		}
		for deadline := time.Now().Add(20 * time.Second); serverGoroutines("awaitReadable") != waiters || serverGoroutines("(*Hub).Serve") != 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d of %d readers wait in awaitReadable", transport, serverGoroutines("awaitReadable"), waiters)
			}
		}
		perWaiter[transport] = float64(stacksInUse()-before) / waiters
		t.Logf("%s: %.0f B of stacks per idle waiter (server and client)", transport, perWaiter[transport])
		for _, c := range conns {
			c.CloseNow()
		}
		cancel()
		srv.Close()
		for deadline := time.Now().Add(20 * time.Second); serverGoroutines("(*socket).read") != 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d readers left after the clients went", transport, serverGoroutines("(*socket).read"))
			}
		}
	}
	// A reader grown to 4 KiB would be 2 KiB more per waiter; half of that is the margin.
	if perWaiter["tls"] > perWaiter["tcp"]+1024 {
		t.Errorf("an idle TLS waiter keeps %.0f B of stacks, a plain one %.0f B: the TLS reader's stack is grown",
			perWaiter["tls"], perWaiter["tcp"])
	}
}

// stacksInUse is the goroutine stacks' memory in use after two collections (the
// second frees what the first found unused in the stacks' pools).
func stacksInUse() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.StackInuse
}
