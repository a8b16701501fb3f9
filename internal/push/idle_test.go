//go:build linux

package push

import (
	"context"
	"fmt"
	"net/http/httptest"
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
