package push

import (
	"encoding/binary"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
)

// The room writes its own messages' WebSocket frames, so that a push round can write a
// position straight onto the connection with one non-blocking write(2) (see
// socket.push). coder/websocket still reads the connection, answers pings and writes
// close frames; those go through wireWriter, so a frame of ours and one of its
// never interleave.

// Server frames are never masked (RFC 6455 5.1): a text frame is its header and the
// message's bytes.
const (
	frameText     = 0x81 // FIN, text
	frameLen16    = 126  // the length follows in two bytes
	maxShortFrame = 125  // longest length the header's second byte holds
	frameHeadRoom = 4    // header bytes reserved in front of a message (up to 64 KiB)
)

// appendFrame appends v's message as a text frame: the JSON is written once, after
// room for the longest header it may need, and the header is filled in after.
func appendFrame(v *page.View, dst []byte) []byte {
	at := len(dst)
	dst = v.AppendJSON(append(dst, 0, 0, 0, 0))
	return endTextFrame(dst, at)
}

// endTextFrame fills in the header of the frame at dst[at:], whose message follows
// frameHeadRoom reserved bytes. A short message's header is two bytes, so the message
// moves up two.
func endTextFrame(dst []byte, at int) []byte {
	n := len(dst) - at - frameHeadRoom
	if n <= maxShortFrame {
		dst[at], dst[at+1] = frameText, byte(n)
		return append(dst[:at+2], dst[at+frameHeadRoom:]...)
	}
	// Longer than 64 KiB would need the 8-byte form; no message of ours comes near.
	dst[at], dst[at+1] = frameText, frameLen16
	binary.BigEndian.PutUint16(dst[at+2:], uint16(n))
	return dst
}

// admittedFrame is the admitted message, framed.
var admittedFrame = endTextFrame(append([]byte{0, 0, 0, 0}, admittedMessage...), 0)

// wireWriter is the writer coder/websocket's frames go out through: it takes the
// socket's wire lock around each write, and bounds the write by writeTimeout, as the
// socket's own writes are (socket.sendHeld): a pong the library answers from the
// reader to a client that reads nothing must not hold the wire, and the writer
// waiting for it, for ever. The library flushes every control frame in one write, so
// one lock per write is one lock per frame.
type wireWriter struct {
	conn net.Conn
	wire *sync.Mutex
}

func (w wireWriter) Write(p []byte) (int, error) {
	w.wire.Lock()
	defer w.wire.Unlock()
	if err := w.conn.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
		return 0, err
	}
	return w.conn.Write(p)
}

// rawTCP returns conn's descriptor access when conn is a plain TCP connection, where
// the bytes written are the bytes sent. Anything else (TLS, a listener wrapper's own
// connection) is written only through conn.
func rawTCP(conn net.Conn) syscall.RawConn {
	tcp, ok := conn.(*net.TCPConn)
	if !ok {
		return nil
	}
	raw, err := tcp.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}
