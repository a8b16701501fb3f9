package push

import (
	"bytes"
	"crypto/tls"
	"net"
	"reflect"
	"sync"
	"syscall"
	"unsafe"
)

// Over TLS the bytes on the wire are not our frame's: the *tls.Conn seals a frame into
// a record and writes the record to the TCP connection under it. When a waiting socket
// opens, that TCP connection is swapped for a tlsWire of our own (adoptTLS), so that a
// push writes its record as a plain push writes its frame: one non-blocking write(2)
// from the hub's goroutine, the rest (when the client has let its buffers fill) left to
// the socket's writer, which sends it before anything else. Every other write through
// the connection (the writer's, the library's, a closing alert) takes the runtime's
// blocking way, with its deadlines.
//
// Why not the tls.Conn's own write to the TCP connection: that write may block, so a
// push would first have to ask the kernel whether the send queue has room (SIOCOUTQ),
// and the ask, the runtime's write path and the scheduler's handling of a system call
// that may block made a TLS message cost an instance 1.19-1.33 times a plain one at
// 100,000 waiters (21.2 µs in the last run); through tlsWire it cost 17.5-22.8 µs in
// five runs since, 1.02-1.58 times plain, whose own cost moved between them too (go
// run ./load -only ws -tls, from caddytest/; docs/performance.md, "Over TLS").

// tlsWire is the TCP connection under a waiting socket's *tls.Conn. Reads, deadlines
// and Close are the TCP connection's.
type tlsWire struct {
	*net.TCPConn
	raw syscall.RawConn // the descriptor, for writeNow and the idle reader (idle.go)
	tc  *tls.Conn       // the connection over it

	mu      sync.Mutex
	pushing bool   // a push is writing: take what the kernel takes at once (push)
	rest    []byte // what a push's records left unsent
}

// Write is how crypto/tls sends a record. While a push writes, the record goes out
// with one non-blocking write, and what the kernel does not take is kept for push to
// hand over; it reports the record sent, since it will be, in order. crypto/tls writes
// records one at a time (its own lock), so a record never cuts into another.
func (w *tlsWire) Write(b []byte) (int, error) {
	w.mu.Lock()
	if !w.pushing {
		w.mu.Unlock()
		return w.TCPConn.Write(b)
	}
	defer w.mu.Unlock()
	n := 0
	if w.rest == nil {
		n = writeNow(w.raw, b)
	}
	if n < len(b) {
		w.rest = append(w.rest, b[n:]...)
	}
	return len(b), nil
}

// push writes frame through the TLS connection without waiting, with the socket's wire
// held, and returns what the kernel did not take: bytes of sealed records, which must
// go out on the TCP connection before anything else (socket.sendHeld).
func (w *tlsWire) push(frame []byte) (rest []byte, err error) {
	w.mu.Lock()
	w.pushing = true
	w.mu.Unlock()
	_, err = w.tc.Write(frame)
	w.mu.Lock()
	w.pushing = false
	rest, w.rest = w.rest, nil
	w.mu.Unlock()
	return rest, err
}

// adoptTLS puts a tlsWire under tc, when tc runs over plain TCP, and returns it; nil
// when it cannot (another connection under TLS, or a crypto/tls whose field has
// changed: then pushes go to the socket's writer). It must run before anything else
// uses tc: the socket's upgrade is over and its reader not yet started.
func adoptTLS(tc *tls.Conn) *tlsWire {
	tcp, ok := tc.NetConn().(*net.TCPConn)
	if !ok || tlsConnField == nil {
		return nil
	}
	raw, err := tcp.SyscallConn()
	if err != nil {
		return nil
	}
	w := &tlsWire{TCPConn: tcp, raw: raw, tc: tc}
	*(*net.Conn)(unsafe.Add(unsafe.Pointer(tc), *tlsConnField)) = w
	return w
}

// tlsConnField is the offset of the connection under a *tls.Conn, found once by name
// and type as the field is unexported; nil if crypto/tls renames or retypes it, which
// TestTLSPushesWriteAtOnceUnlessTheClientLagsBehind fails to say.
var tlsConnField = func() *uintptr {
	f, ok := reflect.TypeFor[tls.Conn]().FieldByName("conn")
	if !ok || len(f.Index) != 1 || f.Type != reflect.TypeFor[net.Conn]() {
		return nil
	}
	return &f.Offset
}()

// releaseHandshakeBuffers lets go of what a *tls.Conn keeps from its handshake: the
// buffer it read the ClientHello into (rawInput, grown to ~4 KiB by a ClientHello that
// carries a post-quantum key share, as Go's and the browsers' do), the reader of the
// last record's plaintext, which points into that buffer (input), and the buffer it
// assembled the handshake messages in (hand, ~2 KiB). crypto/tls keeps them for the
// life of the connection, and a waiting socket reads a few bytes an hour. The reader
// calls it again after each message it reads (idle.go), so what that read grew goes
// too. Only empty ones are dropped (a zero bytes.Buffer or bytes.Reader is ready for
// use), and it reports whether all of them were empty, that is, whether nothing the
// client sent waits above the descriptor. It must not run beside a read of tc.
func releaseHandshakeBuffers(tc *tls.Conn) bool {
	if len(tlsInputs) == 0 {
		return false
	}
	base := unsafe.Pointer(tc)
	empty := true
	for _, f := range tlsInputs {
		switch p := unsafe.Add(base, f.offset); {
		case f.reader && (*bytes.Reader)(p).Len() == 0:
			*(*bytes.Reader)(p) = bytes.Reader{}
		case !f.reader && (*bytes.Buffer)(p).Len() == 0:
			*(*bytes.Buffer)(p) = bytes.Buffer{}
		default:
			empty = false
		}
	}
	return empty
}

// tlsInput is where crypto/tls keeps one of its read buffers in a Conn.
type tlsInput struct {
	offset uintptr
	reader bool // a bytes.Reader; else a bytes.Buffer
}

// tlsInputs are found once, by name and type, as the fields are unexported; if
// crypto/tls renames or retypes one, the list is empty, nothing is released, and
// TestTLSHandshakeBuffersReleased fails to say so.
var tlsInputs = func() []tlsInput {
	conn := reflect.TypeFor[tls.Conn]()
	var found []tlsInput
	for _, name := range []string{"rawInput", "input", "hand"} {
		f, ok := conn.FieldByName(name)
		switch {
		case ok && len(f.Index) == 1 && f.Type == reflect.TypeFor[bytes.Buffer]():
			found = append(found, tlsInput{offset: f.Offset})
		case ok && len(f.Index) == 1 && f.Type == reflect.TypeFor[bytes.Reader]():
			found = append(found, tlsInput{offset: f.Offset, reader: true})
		default:
			return nil
		}
	}
	return found
}()
