package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"
)

// A waiterConn is one visitor's single TCP connection to an instance: it joins the room
// with a plain GET, as an API client would, then upgrades the same connection to the
// waiting WebSocket with the cookie it was given. One connection per waiter keeps a
// client process's sockets and source ports to one per waiter.
//
// The WebSocket side is a minimal RFC 6455 client, written here because a full library
// client per socket would cost more memory than the server's side we are measuring,
// and a client process must hold ~17,000 of them. It reads what the waiting room
// sends (unmasked text frames, one frame per message, and control frames) and masks
// everything it writes (pongs and its close reply), as a client must. Its frames are
// parsed from bytes already read (take), so the same parser serves a goroutine
// reading one socket (next) and a loop reading thousands (epoll_linux.go).
type waiterConn struct {
	c      net.Conn      // the TCP connection, or the TLS connection over feed
	feed   *feedConn     // under c when it is TLS (see feedConn); nil for plain HTTP
	origin string        // the page's origin, scheme and host
	br     *bufio.Reader // the handshake's; after it, its leftovers move to in
	in     []byte        // read and not yet parsed: the start of a frame, most often nothing
	out    io.Writer     // where pongs and the close reply go
	cookie string        // the Cookie header the join earned (the room's cookie)
}

// subprotocol is the waiting page's WebSocket subprotocol (docs/waiting-page.md).
const subprotocol = "waiting-room.v1"

// handshakeTimeout bounds the join and the upgrade together: a liveness deadline on
// something that takes milliseconds, never a measurement.
const handshakeTimeout = 30 * time.Second

// maxServerMessage bounds a message we accept; a position is ~170 bytes.
const maxServerMessage = 4096

var errNotQueued = errors.New("the join was not queued")

// joinAndWait joins the room at path on addr (host:port) from d's source address and
// opens the waiting WebSocket on the same connection. It returns once the upgrade is
// accepted; the first position is the first message read. cookie, when not empty, is
// the room's cookie of an earlier join: the visitor comes back to its place.
func joinAndWait(d *waiterDialer, addr, path, cookie string) (*waiterConn, error) {
	raw, err := d.net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	w := &waiterConn{c: raw, origin: "http://" + addr, cookie: cookie}
	if d.tls != nil {
		cfg := d.tls.Clone()
		cfg.ServerName, _, _ = net.SplitHostPort(addr)
		w.feed = &feedConn{Conn: raw}
		w.c, w.origin = tls.Client(w.feed, cfg), "https://"+addr
	}
	w.br, w.out = bufio.NewReaderSize(w.c, 1024), w.c
	if err := w.handshake(addr, path); err != nil {
		w.c.Close()
		return nil, err
	}
	// The first position may have come with the upgrade's answer.
	if n := w.br.Buffered(); n > 0 {
		early, _ := w.br.Peek(n)
		w.in = bytes.Clone(early)
	}
	w.br = nil
	return w, nil
}

func (w *waiterConn) handshake(addr, path string) error {
	if err := w.c.SetDeadline(time.Now().Add(handshakeTimeout)); err != nil {
		return err
	}
	join := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nAccept: application/json\r\n", path, addr)
	if w.cookie != "" {
		join += "Cookie: " + w.cookie + "\r\n"
	}
	if _, err := io.WriteString(w.c, join+"\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(w.br, nil)
	if err != nil {
		return fmt.Errorf("joining: %w", err)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxServerMessage))
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("joining: %w", err)
	}
	var answer struct{ Status string }
	if json.Unmarshal(body, &answer) != nil || answer.Status != "queued" {
		return fmt.Errorf("%w: %d %q", errNotQueued, resp.StatusCode, body)
	}
	var cookies []string
	for _, ck := range resp.Cookies() {
		cookies = append(cookies, ck.Name+"="+ck.Value)
	}
	switch {
	case len(cookies) > 0:
		w.cookie = strings.Join(cookies, "; ")
	case w.cookie == "":
		return errors.New("joining: no cookie in the answer")
	}

	key := make([]byte, 16)
	rand.Read(key)
	encodedKey := base64.StdEncoding.EncodeToString(key)
	if _, err := fmt.Fprintf(w.c, "GET %s HTTP/1.1\r\nHost: %s\r\nOrigin: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Protocol: %s\r\nCookie: %s\r\n\r\n",
		path, addr, w.origin, encodedKey, subprotocol, w.cookie); err != nil {
		return err
	}
	resp, err = http.ReadResponse(w.br, nil)
	if err != nil {
		return fmt.Errorf("upgrading: %w", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxServerMessage))
		resp.Body.Close()
		return &upgradeError{cookie: w.cookie, status: resp.StatusCode, body: body}
	}
	sum := sha1.Sum([]byte(encodedKey + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	if got := resp.Header.Get("Sec-WebSocket-Accept"); got != base64.StdEncoding.EncodeToString(sum[:]) {
		return fmt.Errorf("upgrading: wrong Sec-WebSocket-Accept %q", got)
	}
	if got := resp.Header.Get("Sec-WebSocket-Protocol"); got != subprotocol {
		return fmt.Errorf("upgrading: subprotocol %q", got)
	}
	return w.c.SetDeadline(time.Time{})
}

// An upgradeError is a waiting WebSocket the server did not open for a visitor it had
// queued: the page then polls and tries again a few seconds later, with its cookie.
type upgradeError struct {
	cookie string
	status int
	body   []byte
}

func (e *upgradeError) Error() string {
	return fmt.Sprintf("upgrading: status %d %q", e.status, e.body)
}

// A closeError is the server's close frame: the socket ended by the server's choice.
type closeError struct{ code int }

func (e closeError) Error() string { return fmt.Sprintf("closed by the server with code %d", e.code) }

// Message kinds the waiting room sends.
const (
	msgPosition = "position"
	msgAdmitted = "admitted"
)

// next reads the next message and returns its "type". buf is where it reads into (at
// least 2 × maxServerMessage bytes). Pings are answered on the way; a close frame is
// answered and returned as a closeError.
func (w *waiterConn) next(buf []byte) (kind string, err error) {
	for {
		kind, ok, err := w.take()
		if err != nil || ok {
			return kind, err
		}
		if err := w.receive(buf, w.c.Read); err != nil {
			return "", err
		}
	}
}

// receive reads once through read into buf, after what w.in holds, and leaves w.in
// holding both: it is buf's until keep. buf must hold a frame's start and then some.
func (w *waiterConn) receive(buf []byte, read func([]byte) (int, error)) error {
	n := copy(buf, w.in)
	m, err := read(buf[n:])
	if m > 0 {
		w.in = buf[:n+m]
		return nil
	}
	w.in = buf[:n]
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// keep copies out the start of a frame that receive left in a shared buffer.
func (w *waiterConn) keep() {
	if len(w.in) == 0 {
		w.in = nil
		return
	}
	w.in = bytes.Clone(w.in)
}

// take parses frames off the front of w.in until it finds a message, whose type it
// returns with ok; ok is false when w.in holds no whole message. Pings are answered;
// a close frame is answered and returned as a closeError.
func (w *waiterConn) take() (kind string, ok bool, err error) {
	for {
		op, fin, payload, n, err := parseFrame(w.in)
		if err != nil || n == 0 {
			return "", false, err
		}
		w.in = w.in[n:]
		switch op {
		case 0x1: // text
			if !fin {
				return "", false, errors.New("fragmented message (the room writes each message in one frame)")
			}
			kind, err := messageType(payload)
			return kind, err == nil, err
		case 0x8: // close: answer with the same code, as the protocol asks
			code := 1005 // no status received
			if len(payload) >= 2 {
				code = int(binary.BigEndian.Uint16(payload))
			}
			_ = w.write(0x8, payload[:min(len(payload), 2)])
			return "", false, closeError{code}
		case 0x9: // ping
			if err := w.write(0xA, payload); err != nil {
				return "", false, err
			}
		case 0xA: // pong: nothing asked for one
		default:
			return "", false, fmt.Errorf("unexpected frame opcode %d", op)
		}
	}
}

// parseFrame parses the server frame at the start of b; n is 0 while b holds only part
// of it.
func parseFrame(b []byte) (op byte, fin bool, payload []byte, n int, err error) {
	if len(b) < 2 {
		return 0, false, nil, 0, nil
	}
	fin, op = b[0]&0x80 != 0, b[0]&0x0f
	if b[0]&0x70 != 0 {
		return 0, false, nil, 0, errors.New("frame with reserved bits set (no extension was negotiated)")
	}
	if b[1]&0x80 != 0 {
		return 0, false, nil, 0, errors.New("masked frame from the server")
	}
	size, head := uint64(b[1]&0x7f), 2
	switch size {
	case 126:
		if len(b) < 4 {
			return 0, false, nil, 0, nil
		}
		size, head = uint64(binary.BigEndian.Uint16(b[2:])), 4
	case 127:
		if len(b) < 10 {
			return 0, false, nil, 0, nil
		}
		size, head = binary.BigEndian.Uint64(b[2:]), 10
	}
	if size > maxServerMessage {
		return 0, false, nil, 0, fmt.Errorf("frame of %d bytes", size)
	}
	if len(b) < head+int(size) {
		return 0, false, nil, 0, nil
	}
	return op, fin, b[head : head+int(size)], head + int(size), nil
}

// messageType reads the "type" of a server message without decoding the rest: the
// harness only counts positions and watches for admission.
func messageType(payload []byte) (string, error) {
	switch {
	case bytes.HasPrefix(payload, []byte(`{"type":"position"`)):
		return msgPosition, nil
	case bytes.Equal(payload, []byte(`{"type":"admitted"}`)):
		return msgAdmitted, nil
	}
	var m struct{ Type string }
	if err := json.Unmarshal(payload, &m); err != nil || m.Type == "" {
		return "", fmt.Errorf("not a room message: %q", payload)
	}
	return m.Type, nil
}

// write sends one masked frame of at most 125 bytes (control frames and short
// messages: all a waiter ever sends).
func (w *waiterConn) write(op byte, payload []byte) error {
	if len(payload) > 125 {
		return fmt.Errorf("frame of %d bytes is too long for write", len(payload))
	}
	frame := make([]byte, 6+len(payload))
	frame[0] = 0x80 | op
	frame[1] = 0x80 | byte(len(payload))
	rand.Read(frame[2:6])
	for i, b := range payload {
		frame[6+i] = b ^ frame[2+i%4]
	}
	_, err := w.out.Write(frame)
	return err
}

func (w *waiterConn) Close() error { return w.c.Close() }

// A feedConn is what a waiter's TLS connection reads and writes through. Until the
// client's epoll loop takes the socket (listener.add), it is the TCP connection. After
// that the loop reads the socket itself and feeds what it read here, and the TLS
// connection decrypts from it: a Read with nothing fed says EAGAIN, which crypto/tls
// takes as a temporary error (it keeps a partial record and reads on next time), so
// the one loop reads thousands of TLS sockets as it reads plain ones. Writes (a pong,
// a close reply) go to the socket directly.
type feedConn struct {
	net.Conn
	fd  int    // the loop's descriptor of the socket; -1 until taken
	fed bool   // the loop has the socket
	in  []byte // read by the loop; in[off:] is not yet decrypted. Kept between
	off int    // messages: an allocation per message was most of the client's garbage.
	err error  // how the socket ended (io.EOF), after in
}

// take hands the socket, now the loop's as fd, over to feeding.
func (f *feedConn) take(fd int) { f.fd, f.fed = fd, true }

// fill reads all the socket has through read and keeps it for the TLS connection. A
// read shorter than buf emptied the socket, so it is the last: asking again only to
// hear "would block" was a second system call per message, and half of what a client
// spent on one over TLS.
func (f *feedConn) fill(buf []byte, read func([]byte) (int, error)) {
	for f.err == nil {
		n, err := read(buf)
		f.in = append(f.in, buf[:max(n, 0)]...)
		switch {
		case err == syscall.EAGAIN:
			return
		case err != nil:
			f.err = err
		case n == 0:
			f.err = io.EOF
		case n < len(buf):
			return
		}
	}
}

func (f *feedConn) Read(b []byte) (int, error) {
	if !f.fed {
		return f.Conn.Read(b)
	}
	if f.off == len(f.in) {
		if f.err != nil {
			return 0, f.err
		}
		return 0, syscall.EAGAIN
	}
	n := copy(b, f.in[f.off:])
	if f.off += n; f.off == len(f.in) {
		f.in, f.off = f.in[:0], 0
	}
	return n, nil
}

func (f *feedConn) Write(b []byte) (int, error) {
	if !f.fed {
		return f.Conn.Write(b)
	}
	return syscall.Write(f.fd, b)
}
