package push

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
)

// A frame's header says what RFC 6455 says it must for every length a message of ours
// may have, on either side of the one-byte limit, and what was in dst stays.
func TestTextFrameHeader(t *testing.T) {
	for _, n := range []int{0, 1, 125, 126, 127, 1000, 65535} {
		msg := bytes.Repeat([]byte{'m'}, n)
		prefix := []byte("before")
		frame := endTextFrame(append(append(bytes.Clone(prefix), 0, 0, 0, 0), msg...), len(prefix))
		if !bytes.HasPrefix(frame, prefix) {
			t.Fatalf("%d bytes: the bytes before the frame changed", n)
		}
		frame = frame[len(prefix):]
		if frame[0] != 0x81 {
			t.Fatalf("%d bytes: first byte %#x, want FIN and text (0x81)", n, frame[0])
		}
		size, head := int(frame[1]), 2
		if frame[1]&0x80 != 0 {
			t.Fatalf("%d bytes: a server frame is masked", n)
		}
		if size == 126 {
			size, head = int(binary.BigEndian.Uint16(frame[2:])), 4
		}
		if n <= 125 && head != 2 || n > 125 && head != 4 {
			t.Fatalf("%d bytes: a %d-byte header", n, head)
		}
		if size != n || !bytes.Equal(frame[head:], msg) {
			t.Fatalf("%d bytes: the frame says %d and carries %d", n, size, len(frame)-head)
		}
	}
}

// onlySocket returns the one socket tr's hub holds, once it holds one.
func onlySocket(t *testing.T, tr *testRoom) *socket {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		tr.hub.mu.Lock()
		for _, ws := range tr.hub.waiters {
			if len(ws.sockets) == 1 {
				s := ws.sockets[0]
				tr.hub.mu.Unlock()
				return s
			}
		}
		tr.hub.mu.Unlock()
	}
	t.Fatal("no socket in the hub")
	return nil
}

// connectedWaiter queues a waiter in a full room of one and opens its WebSocket; it
// returns the test's context (bounded by within), the client's end and the server's.
func connectedWaiter(t *testing.T, within time.Duration) (context.Context, *websocket.Conn, *socket) {
	t.Helper()
	// No hub loop: its rounds would push positions of their own between the test's,
	// and the latest of those, not the test's, is rightly what goes out last.
	tr := newRoom(t, 1, false)
	tr.join()
	cookie := tr.join()
	srv := serveRoom(t, tr, nil)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	t.Cleanup(cancel)
	c := dialWaiter(ctx, t, tr, srv, cookie)
	t.Cleanup(func() { c.CloseNow() })
	return ctx, c, onlySocket(t, tr)
}

// pushNumbered pushes a position message numbered k (its position), with a room name
// of pad bytes.
func pushNumbered(s *socket, k, pad int) {
	v := &page.View{Type: "position", Room: strings.Repeat("r", pad), Status: "queued", Position: k}
	s.push(appendFrame(v, nil))
}

// readNumbered reads messages until one numbered last arrives, checking that the
// numbered ones (the hub's own pushes, position 1, may come between) only ever grow;
// any damage to a frame fails the library's read.
func readNumbered(ctx context.Context, c *websocket.Conn, last int) error {
	return readNumberedTelling(ctx, c, last, nil)
}

// readNumberedTelling is readNumbered, storing in heard (unless nil) the last number
// read, for a writer that paces itself by the reader.
func readNumberedTelling(ctx context.Context, c *websocket.Conn, last int, heard *atomic.Int64) error {
	prev := 0
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return fmt.Errorf("after message %d: %w", prev, err)
		}
		var v page.View
		if err := json.Unmarshal(data, &v); err != nil {
			return err
		}
		if v.Position < firstNumbered {
			continue
		}
		if v.Position <= prev {
			return fmt.Errorf("message %d came after %d", v.Position, prev)
		}
		prev = v.Position
		if heard != nil {
			heard.Store(int64(prev))
		}
		if prev == last {
			return nil
		}
	}
}

const firstNumbered = 1000

// A client that stops reading fills its buffers; what push could not write at once
// (part of a frame, then whole ones) goes to the writer, which finishes the frame
// before anything else and then writes the latest news. When the client reads
// again, every frame is whole, they come in order, and the last one pushed arrives.
func TestPushToAStalledClientKeepsFramesWholeAndInOrder(t *testing.T) {
	ctx, c, s := connectedWaiter(t, 60*time.Second)
	if s.raw == nil {
		t.Fatal("a plain TCP socket has no descriptor for push")
	}

	// Frames of about 1 KiB: kernel buffers fill after a few thousand.
	k := firstNumbered
	for ; ; k++ {
		pushNumbered(s, k, 1000)
		s.mu.Lock()
		handedOver := s.writing
		s.mu.Unlock()
		if handedOver { // the buffers are full: the writer has the rest
			break
		}
		if k > firstNumbered+1_000_000 {
			t.Fatal("a million frames went out to a client that reads nothing")
		}
	}
	last := k + 10
	for k++; k <= last; k++ {
		pushNumbered(s, k, 1000) // pending: only the latest will go
	}
	if err := readNumbered(ctx, c, last); err != nil {
		t.Fatalf("after %d frames pushed while the client stalled: %v", last-firstNumbered, err)
	}
}

// coder/websocket writes on the same connection (here: pongs to the client's pings)
// while push writes positions, and no frame is cut by another.
func TestLibraryFramesAndPushedFramesDoNotInterleave(t *testing.T) {
	ctx, c, s := connectedWaiter(t, 60*time.Second)

	// Positions go out all the while the pings are answered, then a last one; paced by
	// the reader, at most window frames ahead of it, so that a pong waits behind a few
	// frames, not behind megabytes of them, however slow the machine (the library gives
	// a pong 5 s).
	const pings, last, window = 100, 1 << 30, 64
	var heard atomic.Int64
	heard.Store(firstNumbered - 1)
	read := make(chan error, 1)
	go func() { read <- readNumberedTelling(ctx, c, last, &heard) }()
	pinged := make(chan error, 1)
	go func() {
		for range pings {
			if err := c.Ping(ctx); err != nil {
				pinged <- err
				return
			}
		}
		pinged <- nil
	}()
	k := firstNumbered
	for pinging := true; pinging; k++ {
		select {
		case err := <-pinged:
			if err != nil {
				select {
				case rerr := <-read:
					t.Fatalf("a ping went unanswered (%v); the reader had stopped: %v", err, rerr)
				default:
				}
				t.Fatalf("a ping went unanswered: %v", err)
			}
			pinging = false
		default:
		}
		for int64(k)-heard.Load() > window {
			select {
			case err := <-read:
				t.Fatalf("the reader stopped before the last position: %v", err)
			default:
			}
			time.Sleep(50 * time.Microsecond)
		}
		pushNumbered(s, k, 0)
	}
	pushNumbered(s, last, 0)
	if err := <-read; err != nil {
		t.Fatalf("after %d positions and %d pings: %v", k-firstNumbered, pings, err)
	}
}

// Over TLS the bytes on the wire are not the frame's, so push never writes the frame
// to the descriptor: it goes through the TLS connection, sealed, and the waiter hears.
func TestSocketOverTLSIsWrittenThroughTheConnection(t *testing.T) {
	tr := newTestRoom(t, 1)
	tr.join()
	cookie := tr.join()
	ctx, c := dialTLSWaiter(t, tr, cookie)
	if v := readView(ctx, t, c); v.Type != "position" || v.Position != 1 {
		t.Fatalf("first message over TLS: %+v", v)
	}
	s := onlySocket(t, tr)
	if s.raw != nil {
		t.Fatal("a TLS socket would be written around its encryption")
	}
	pushNumbered(s, firstNumbered, 0)
	if err := readNumbered(ctx, c, firstNumbered); err != nil {
		t.Fatal(err)
	}
}
