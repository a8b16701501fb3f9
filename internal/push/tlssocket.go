package push

import (
	"bytes"
	"crypto/tls"
	"net"
	"reflect"
	"syscall"
	"unsafe"
)

// Over TLS the bytes on the wire are not our frame's, so push cannot write(2) them
// itself; it writes through the *tls.Conn instead, on the hub's goroutine, when that
// write cannot block: the connection's kernel send queue is empty (sendQueueEmpty),
// so the client has acknowledged everything sent before and the kernel takes a
// record of a few hundred bytes whole. Anything else goes to the socket's writer, as
// for plain TCP. A goroutine started and scheduled per message was the cost TLS added
// to a push (caddytest/load -tls, the ws section; figures in docs/performance.md).
//
// Asking the kernel is a system call of its own (SIOCOUTQ): at 100,000 waiters it
// was 16-18 % of an instance's CPU (caddytest/load -tls -profiles, in
// ws-caddy0-tls-cpu.pprof), and is 2.6 % now. A look that finds the queue empty lets
// that push and the next tlsPushesPerLook-1 go out unasked, as long as each is a
// short frame and nothing else is written between (mayWriteTLS). Whatever the client
// does, at most tlsPushesPerLook short records are then queued, 2 KiB and the
// kernel's overhead per segment, well under the 16 KiB a TCP send buffer starts at
// (tcp_wmem), so such a write is still taken whole.

// tlsDescriptor returns the descriptor access of the TCP connection under conn when
// conn is TLS over plain TCP; nil otherwise.
func tlsDescriptor(conn net.Conn) (*tls.Conn, syscall.RawConn) {
	tc, ok := conn.(*tls.Conn)
	if !ok {
		return nil, nil
	}
	return tc, rawTCP(tc.NetConn())
}

// writeTLSNow writes frame through the TLS connection at once, from the hub's
// goroutine, with the wire held; see the top of the file for why it does not block.
// It sets no write deadline: crypto/tls makes any write error permanent, and on a
// machine short of CPU a deadline could pass between setting it and the write(2),
// ending a healthy socket (at 100,000 waiters over TLS, 36 sockets ended so in one
// run with a 100 ms bound).
func (s *socket) writeTLSNow(frame []byte) bool {
	_, err := s.conn.Write(frame)
	return err == nil
}

const (
	tlsPushesPerLook = 4   // pushes one empty send queue lets out (see the top of the file)
	tlsUnaskedFrame  = 512 // longest frame that may go out unasked; a position is ~200 bytes
)

// mayWriteTLS reports whether a push of an n-byte frame may write through the TLS
// connection at once, asking the kernel about the send queue (sendQueueEmpty) only
// when the last look's pushes are spent. Called with the wire held.
func (w *wireLock) mayWriteTLS(raw syscall.RawConn, n int) bool {
	if n > tlsUnaskedFrame {
		w.unasked = 0
		return sendQueueEmpty(raw)
	}
	if w.unasked == 0 {
		if !sendQueueEmpty(raw) {
			return false
		}
		w.unasked = tlsPushesPerLook
	}
	w.unasked--
	return true
}

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
