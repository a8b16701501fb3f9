package push

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Over TLS, a push never writes on the pusher's goroutine (the hub's): it goes to the
// socket's writer (tlssocket.go). A client that reads hears every frame; one that
// stops reading while frames pile up beyond its buffers holds up no push, and once it
// reads again it hears them whole and in order, the last one pushed arriving.
func TestTLSPushesNeverWaitAndArriveInOrder(t *testing.T) {
	ctx, c, s := connectedTLSWaiter(t)
	readView(ctx, t, c)
	if s.raw != nil || s.underTLS == nil {
		t.Fatal("a TLS socket over TCP is to be written through its TLS connection, and waited on at its TCP one")
	}

	k := firstNumbered
	for ; k < firstNumbered+20; k++ {
		pushNumbered(s, k, 0)
		if err := readNumbered(ctx, c, k); err != nil {
			t.Fatal(err)
		}
	}

	// The client stops reading: short frames as positions are, and long ones, more
	// than both ends' buffers hold. A push that blocked would hang here, which the
	// context ends.
	for _, pad := range []int{300, 1000} {
		pushed := make(chan struct{})
		last := k + 4000
		go func() {
			defer close(pushed)
			for ; k <= last; k++ {
				pushNumbered(s, k, pad)
			}
		}()
		select {
		case <-pushed:
		case <-ctx.Done():
			t.Fatalf("a push of %d-byte frames to a client that reads nothing blocked", pad)
		}
		if err := readNumbered(ctx, c, last); err != nil {
			t.Fatalf("after %d-byte frames pushed while the client stalled: %v", pad, err)
		}
	}
}

// awaitIdleWriter waits until no writer is busy with s.
func awaitIdleWriter(t *testing.T, s *socket) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		writing := s.writing
		s.mu.Unlock()
		if !writing {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the client read everything, but the socket's writer never finished")
		}
	}
}

// A push may meet the connection closing (the reader ends the socket when the client
// goes): it neither hangs nor races, and a push after the close fails the socket.
func TestTLSPushMeetsAClose(t *testing.T) {
	ctx, c, s := connectedTLSWaiter(t)
	readView(ctx, t, c)
	pushed := make(chan struct{})
	go func() {
		defer close(pushed)
		for k := firstNumbered; k < firstNumbered+2000; k++ {
			pushNumbered(s, k, 0)
		}
	}()
	s.c.CloseNow() // as the reader's end does
	select {
	case <-pushed:
	case <-ctx.Done():
		t.Fatal("pushes beside a closing connection hung")
	}
	pushNumbered(s, firstNumbered+2000, 0)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		done := s.done
		s.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a push to a closed connection left the socket open for more")
		}
	}
}

// TestMessageSentWithTheUpgradeIsRead over TLS: the frame rides in the request's own
// record, so net/http has read it before the socket is handed over, and the socket
// reads it without looking into crypto/tls's buffer first (it has none of its own).
func TestMessageSentWithTheTLSUpgradeIsRead(t *testing.T) {
	tr := newTestRoom(t, 1)
	tr.join()
	cookie := tr.join()
	srv := httptest.NewUnstartedServer(serveRoom(t, tr, nil).Config.Handler)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	host := srv.Listener.Addr().String()
	conn, err := tls.Dial("tcp", host, &tls.Config{InsecureSkipVerify: true}) // the test server's own certificate
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	request := fmt.Sprintf("GET / HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: %s\r\n"+
		"Cookie: %s=%s\r\n\r\n", host, Subprotocol, cookieName, cookie)
	if _, err := conn.Write(append([]byte(request), maskedText(`{"type":"leave"}`)...)); err != nil { // one record
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	awaitLeft(t, tr, cookie, "the leave sent with the TLS upgrade was not read")
}
