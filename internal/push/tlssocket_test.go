package push

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"
	"unsafe"
)

// After the handshake a TLS connection's buffers from it are let go of, and the
// connection reads and writes on as before.
func TestTLSHandshakeBuffersReleased(t *testing.T) {
	srv := httptest.NewUnstartedServer(nil)
	srv.StartTLS() // for its certificate and a client that trusts it
	defer srv.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan *tls.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		tc := tls.Server(c, srv.TLS)
		if tc.Handshake() != nil {
			accepted <- nil
			return
		}
		accepted <- tc
	}()
	clientCfg := srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	client, err := tls.Dial("tcp", l.Addr().String(), clientCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, err := client.Write([]byte("hello")); err != nil { // the handshake is over on both ends
		t.Fatal(err)
	}
	server := <-accepted
	if server == nil {
		t.Fatal("no TLS connection accepted")
	}
	defer server.Close()
	got := make([]byte, 5)
	if _, err := io.ReadFull(server, got); err != nil || string(got) != "hello" {
		t.Fatalf("read %q, %v", got, err)
	}
	if held := tlsBuffered(t, server); held < 1024 {
		t.Fatalf("the handshake left only %d bytes of buffers; this test expects it to leave some", held)
	}
	if !releaseHandshakeBuffers(server) {
		t.Fatal("nothing released: crypto/tls's fields have changed (see releaseHandshakeBuffers)")
	}
	if held := tlsBuffered(t, server); held != 0 {
		t.Fatalf("%d bytes of buffers kept after the release", held)
	}
	// Both ways, after the release, several records.
	for i := range 3 {
		msg := bytes.Repeat([]byte{byte('a' + i)}, 3000)
		if _, err := client.Write(msg); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(server, got); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("record %d after the release: %v", i, err)
		}
		if _, err := server.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(client, got); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("record %d back after the release: %v", i, err)
		}
	}
}

// tlsBuffered is the capacity of the buffers releaseHandshakeBuffers lets go of.
func tlsBuffered(t *testing.T, tc *tls.Conn) int {
	v := reflect.ValueOf(tc).Elem()
	n := 0
	for _, name := range []string{"rawInput", "hand"} {
		f := v.FieldByName(name)
		if !f.IsValid() || f.Type() != reflect.TypeFor[bytes.Buffer]() {
			t.Fatalf("crypto/tls.Conn has no %s bytes.Buffer", name)
		}
		n += (*bytes.Buffer)(unsafe.Pointer(f.UnsafeAddr())).Cap()
	}
	return n
}

// Over TLS, a push to a client that reads goes out on the hub's goroutine, sealed and
// written at once, with no writer started; once the client stops reading and its
// buffers fill, what the kernel does not take goes to the writer, and the client
// hears every frame whole and in order once it reads again.
func TestTLSPushesWriteAtOnceUnlessTheClientLagsBehind(t *testing.T) {
	if tlsConnField == nil {
		t.Fatal("crypto/tls has no field conn of type net.Conn any more: TLS pushes all go to a writer (see adoptTLS)")
	}
	ctx, c, s := connectedTLSWaiter(t)
	readView(ctx, t, c)
	if s.tls == nil {
		t.Fatal("a TLS socket over TCP was not given a wire of its own")
	}

	const direct = 20
	k := firstNumbered
	for ; k < firstNumbered+direct; k++ {
		awaitIdleWriter(t, s)
		pushNumbered(s, k, 0)
		s.mu.Lock()
		handedOver := s.writing
		s.mu.Unlock()
		if handedOver {
			t.Fatalf("push %d to a client that reads went to a writer", k-firstNumbered+1)
		}
		if err := readNumbered(ctx, c, k); err != nil {
			t.Fatal(err)
		}
	}

	// The client stops reading: records fill its buffers, then the writer takes over,
	// for short frames as positions are, and for long ones. A push that blocked would
	// hang here, which the context ends.
	for _, pad := range []int{300, 1000} {
		awaitIdleWriter(t, s)
		stalled := make(chan error, 1)
		go func() {
			for first := k; ; k++ {
				pushNumbered(s, k, pad)
				s.mu.Lock()
				handedOver := s.writing
				s.mu.Unlock()
				if handedOver {
					stalled <- nil
					return
				}
				if k > first+1_000_000 {
					stalled <- errors.New("a million frames went out to a client that reads nothing")
					return
				}
			}
		}()
		select {
		case err := <-stalled:
			if err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatalf("a push of %d-byte frames to a client that reads nothing blocked", pad)
		}
		last := k + 10
		for k++; k <= last; k++ {
			pushNumbered(s, k, pad)
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
