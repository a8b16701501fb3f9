package push

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// A WebSocket over HTTP/2 (RFC 8441) or HTTP/3 (RFC 9220) is opened by an extended
// CONNECT, :protocol websocket, and lives on that one stream: the request body is what
// the client sends, the response body what the server sends, and the frames are RFC
// 6455's. Browsers use it when the server offers it (Go's HTTP/2 server does with
// GODEBUG=http2xconnect=1). coder/websocket accepts only an HTTP/1.1 upgrade of a
// connection it can hijack, so the room shows it one: overStream turns the CONNECT into
// that GET, answers the library's 101 with the 200 the stream wants, and hands over the
// stream as the hijacked connection. The hub then serves the socket as it serves one
// over TLS (no descriptor to park or write onto: a reader and a writer goroutine), and
// the handler stays until the stream ends, since returning would end it.

// isExtendedConnect reports whether r opens a WebSocket on an HTTP/2 or HTTP/3 stream.
// Go's HTTP/2 server keeps :protocol as a header; quic-go's HTTP/3 server puts it in
// r.Proto (as Caddy's reverse proxy reads them).
func isExtendedConnect(r *http.Request) bool {
	if r.Method != http.MethodConnect {
		return false
	}
	switch r.ProtoMajor {
	case 2:
		return r.Header.Get(":protocol") == "websocket"
	case 3:
		return r.Proto == "websocket"
	}
	return false
}

// overStream returns the ResponseWriter and request the library accepts for an
// extended CONNECT, and the stream as a connection, whose done closes once the
// socket has let go of it.
func overStream(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request, *streamConn) {
	up := r.Clone(r.Context())
	up.Method = http.MethodGet
	up.Proto, up.ProtoMajor, up.ProtoMinor = "HTTP/1.1", 1, 1
	up.Header.Del(":protocol")
	up.Header.Set("Connection", "Upgrade")
	up.Header.Set("Upgrade", "websocket")
	// The key proves nothing on a stream (RFC 8441 5): the library wants one, and its
	// answer is dropped with the 101.
	key := make([]byte, 16)
	rand.Read(key)
	up.Header.Set("Sec-WebSocket-Key", base64.StdEncoding.EncodeToString(key))
	sc := &streamConn{body: r.Body, w: w, rc: http.NewResponseController(w), done: make(chan struct{}), remote: r.RemoteAddr}
	return &streamWriter{ResponseWriter: w, conn: sc}, up, sc
}

// streamWriter answers the library's upgrade on the stream: 200 for 101, without the
// HTTP/1.1 connection fields, and "hijacks" by handing over the stream.
type streamWriter struct {
	http.ResponseWriter
	conn *streamConn
}

func (sw *streamWriter) WriteHeader(code int) {
	if code == http.StatusSwitchingProtocols {
		h := sw.Header()
		h.Del("Connection")
		h.Del("Upgrade")
		h.Del("Sec-WebSocket-Accept")
		code = http.StatusOK
	}
	sw.ResponseWriter.WriteHeader(code)
}

func (sw *streamWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if err := sw.conn.rc.Flush(); err != nil {
		return nil, nil, err
	}
	sw.conn.mu.Lock()
	sw.conn.hijacked = true
	sw.conn.mu.Unlock()
	return sw.conn, bufio.NewReadWriter(bufio.NewReaderSize(sw.conn, socketReadBuffer), bufio.NewWriterSize(sw.conn, socketWriteBuffer)), nil
}

func (sw *streamWriter) Unwrap() http.ResponseWriter { return sw.ResponseWriter }

// streamConn is an HTTP/2 or HTTP/3 stream as a net.Conn: reads from the request
// body, writes to the response, each flushed.
type streamConn struct {
	body   io.ReadCloser
	w      http.ResponseWriter
	rc     *http.ResponseController
	remote string

	// mu is held by a write and by Close: once the handler has returned, the stream
	// must not be written.
	mu       sync.Mutex
	closed   bool
	hijacked bool // the library took the stream as its connection
	done     chan struct{}
}

// taken reports whether the library took the stream: then the socket closes it.
func (sc *streamConn) taken() bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.hijacked
}

func (sc *streamConn) Read(p []byte) (int, error) { return sc.body.Read(p) }

func (sc *streamConn) Write(p []byte) (int, error) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.closed {
		return 0, net.ErrClosed
	}
	n, err := sc.w.Write(p)
	if err == nil {
		err = sc.rc.Flush()
	}
	return n, err
}

// Close ends the stream: the body is closed, and the handler, waiting on done,
// returns.
func (sc *streamConn) Close() error {
	sc.body.Close() // a read waiting on the client ends
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if !sc.closed {
		sc.closed = true
		close(sc.done)
	}
	return nil
}

func (sc *streamConn) LocalAddr() net.Addr  { return streamAddr("") }
func (sc *streamConn) RemoteAddr() net.Addr { return streamAddr(sc.remote) }

func (sc *streamConn) SetDeadline(t time.Time) error {
	return errors.Join(sc.SetReadDeadline(t), sc.SetWriteDeadline(t))
}

func (sc *streamConn) SetReadDeadline(t time.Time) error {
	return notSupportedIsNil(sc.rc.SetReadDeadline(t))
}

func (sc *streamConn) SetWriteDeadline(t time.Time) error {
	return notSupportedIsNil(sc.rc.SetWriteDeadline(t))
}

// notSupportedIsNil lets a server without per-stream deadlines serve the stream
// without them: its writes are the socket's own goroutine's, never the hub's.
func notSupportedIsNil(err error) error {
	if errors.Is(err, http.ErrNotSupported) {
		return nil
	}
	return err
}

type streamAddr string

func (a streamAddr) Network() string { return "stream" }
func (a streamAddr) String() string  { return string(a) }
