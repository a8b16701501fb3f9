package push

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// Subprotocol is the WebSocket Subprotocol of the waiting page. The room takes over only
// upgrades that ask for it, so a site's own WebSockets pass through untouched.
const Subprotocol = "waiting-room.v1"

const (
	// maxClientMessage bounds what a client may send; the only message is a short
	// {"type":"leave"}.
	maxClientMessage = 512
	// The buffers of an upgraded connection. net/http hands a hijacked connection over
	// with the 4 KiB buffers it served the request with; a waiting socket reads a few
	// short client messages and writes positions of ~200 bytes, and 8 KiB of buffers
	// would be most of what each of 100,000 waiters costs. The room writes its
	// messages itself (wsframe.go); the write buffer is coder/websocket's, for its
	// control frames (a pong, the close), and holds the longest (2 + 125 bytes), so
	// each goes out in one write. The read buffer holds a leave or a control frame; a
	// longer frame reads through it.
	socketReadBuffer  = 128
	socketWriteBuffer = 128
)

// Close codes the page understands.
const (
	// closeLost: the waiter's place is gone (left from another tab, expired, removed);
	// the page polls and rejoins.
	closeLost websocket.StatusCode = 4001
	// closeMissed: the waiter's turn came while it was away (a no-show, queue.Limits.
	// ArriveTTL) and the place is kept, but a socket alone does not bring it back
	// (queue.Store.Listen); the page polls, and that request does.
	closeMissed websocket.StatusCode = 4002
)

// Messages the server sends besides positions.
var admittedMessage = []byte(`{"type":"admitted"}`)

// socket is one open waiting WebSocket. A push round writes a position onto the
// connection itself only when that cannot wait: one non-blocking write(2) of the frame
// that the client's kernel buffers take whole (push). Anything else (a client that is
// not reading, an admission, a close, every push over TLS: tlssocket.go) goes to a
// writer goroutine of the socket's own, so one slow client never holds up the pushes
// to the others. The writer runs only while there is such news, and the reader only
// while the client has something to say (idle.go), so an idle socket keeps no
// goroutine: at 100,000 waiters, goroutines and their stacks would be most of the
// memory.
type socket struct {
	hb   *Hub
	c    *websocket.Conn
	conn net.Conn        // c's connection, for write deadlines
	raw  syscall.RawConn // conn's descriptor when it is plain TCP, for push; else nil
	br   *bufio.Reader   // what the library reads c through, for park (idle.go)
	// underTLS is the descriptor of the TCP connection under conn when conn is TLS
	// over TCP, which the idle watch waits on (idle.go); it is never written: only
	// conn may (tlssocket.go).
	underTLS syscall.RawConn
	// probing is held by the reader while it peeks at what crypto/tls holds, and
	// waited for by the writer before the library's closing handshake reads (idle.go).
	probing  sync.Mutex
	parkedAs uint64 // the socket's token in the hub's idle watch (under its lock)
	id       queue.VisitorID
	release  func() // gives back the address's connection count; nil without a cap

	// wire is held while a frame is being written, whoever writes it: push, the
	// writer, or coder/websocket (through wireWriter). A frame is never cut by another.
	wire sync.Mutex

	mu      sync.Mutex
	rest    []byte  // the unsent end of a frame push began; the writer sends it first
	pending *[]byte // the latest position not yet written, framed (from frameCopies)
	note    *[]byte // the latest message to the line not yet written, framed (likewise)
	// message is the message to the line this socket was last given (hub lock): a
	// socket connecting as the message changes is told each text once.
	message  string
	admitted bool
	lost     bool
	missed   bool
	left     bool
	closing  bool
	writing  bool // a writer goroutine is on its way or running
	done     bool // the writer closed the connection: nothing more is written

	// Kept by the hub goroutine only: the position it last wrote, and when; and the
	// latest the store gave, which may not have been written yet (see due).
	lastPosition  int
	lastOffered   time.Time
	knownPosition int
	gone          atomic.Bool // removed from the hub (the hub's resends skip it)
}

// due reports whether a position message, offered at now, is to be written: the
// waiter has heard nothing for resendAfter, or its position changed and its last
// message is at least changeGap old (see changeGap). If so it is recorded as written;
// either way position is what the next resend carries. The other figures (people
// waiting, the ETA) ride along and are never older than that: they change with every
// arrival, and pushing them at once would cost, during a surge of arrivals, a message
// per waiter per round (200,000 a second at 100,000 waiters) to move a count. Hub
// goroutine only.
func (s *socket) due(position int, now time.Time, changeGap time.Duration) bool {
	s.knownPosition = position
	if silence := now.Sub(s.lastOffered); silence < resendAfter && (position == s.lastPosition || silence < changeGap) {
		return false
	}
	s.lastPosition, s.lastOffered = position, now
	return true
}

// push tells the waiter the position message in frame (the caller may reuse frame).
// When no writer is busy with this socket, the frame goes out here and now in one
// non-blocking write, which the client's kernel buffers take whole every time but
// when it has stopped reading. At 100,000 waiters a message every 2 s each is 50,000
// a second, and a goroutine started and scheduled per message cost more than the
// message. What the connection does not take at once is left to the writer.
func (s *socket) push(frame []byte) { s.deliver(frame, &s.pending) }

// deliver is push for a frame whose unsent copy waits in slot (pending or note).
func (s *socket) deliver(frame []byte, slot **[]byte) {
	s.mu.Lock()
	if s.raw != nil && !s.writing && !s.done && s.wire.TryLock() {
		n := writeNow(s.raw, frame)
		switch {
		case n == len(frame):
			s.wire.Unlock()
			s.mu.Unlock()
			return
		case n > 0:
			// Part of the frame is out: the writer sends the rest before anything
			// else, and the wire stays held till then so no frame cuts in.
			s.rest = bytes.Clone(frame[n:])
			s.writing = true
			s.mu.Unlock()
			go s.write()
			return
		}
		s.wire.Unlock()
	}
	// A newer position replaces one not yet written; only the latest matters.
	*slot = copyFrame(*slot, frame)
	start := s.wakeLocked()
	s.mu.Unlock()
	if start {
		go s.write()
	}
}

func (s *socket) admit() { s.settle(&s.admitted) }

func (s *socket) lose() { s.settle(&s.lost) }

// miss ends the socket of a no-show its socket alone does not bring back.
func (s *socket) miss() { s.settle(&s.missed) }

// leave ends the socket of a waiter who gave up the place from this page.
func (s *socket) leave() { s.settle(&s.left) }

func (s *socket) shutdown() { s.settle(&s.closing) }

// settle sets one of the socket's ends (admitted, lost, left, closing) and wakes the
// writer, which says it and closes.
func (s *socket) settle(end *bool) {
	s.mu.Lock()
	*end = true
	start := s.wakeLocked()
	s.mu.Unlock()
	if start {
		go s.write()
	}
}

// wakeLocked reports whether the caller must start a writer for news it just left:
// none is running and the socket is still open. Called with s.mu held.
func (s *socket) wakeLocked() bool {
	if s.writing || s.done {
		return false
	}
	s.writing = true
	return true
}

// write writes the news until there is none, then ends; news left meanwhile is picked
// up by the same loop, so one writer at a time writes, in order.
func (s *socket) write() {
	s.mu.Lock()
	rest := s.rest
	s.rest = nil
	s.mu.Unlock()
	if rest != nil && !s.sendHeld(rest) { // push left the wire held for it
		s.fail()
		return
	}
	for {
		s.mu.Lock()
		frame, note, admitted, lost, left, closing := s.pending, s.note, s.admitted, s.lost, s.left, s.closing
		missed := s.missed
		s.pending, s.note = nil, nil
		s.done = admitted || lost || missed || left || closing
		if frame == nil && note == nil && !s.done {
			s.writing = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		if s.done {
			// The closing handshake below reads the connection: no peek of the
			// reader's at what crypto/tls holds runs beside it (idle.go).
			s.probing.Lock()
			defer s.probing.Unlock()
		}
		switch {
		case admitted:
			s.send(admittedFrame)
			s.c.Close(websocket.StatusNormalClosure, "admitted")
		case closing:
			s.c.Close(websocket.StatusServiceRestart, "reconnect")
		case lost:
			s.c.Close(closeLost, "place lost")
		case missed:
			s.c.Close(closeMissed, "turn missed")
		case left:
			s.c.Close(websocket.StatusNormalClosure, "left")
		}
		if s.done {
			s.letGo()
			return
		}
		if note != nil && !s.sendCopy(note) {
			s.fail()
			return
		}
		if frame != nil && !s.sendCopy(frame) {
			s.fail()
			return
		}
	}
}

// Over TLS every push goes to the writer (tlssocket.go), each with a copy of its
// frame: 2,500 a second per 5,000 waiters. The copies are pooled, so that the pushes
// of an idle room make no garbage, which would grow the heap between collections, and
// the memory of every waiter with it.
var frameCopies = sync.Pool{New: func() any { return new([]byte) }}

// copyFrame copies frame into the unsent copy it replaces, or into a pooled one.
func copyFrame(unsent *[]byte, frame []byte) *[]byte {
	if unsent == nil {
		unsent = frameCopies.Get().(*[]byte)
	}
	*unsent = append((*unsent)[:0], frame...)
	return unsent
}

// sendCopy writes a copied frame, bounded by writeTimeout, and gives the copy back.
func (s *socket) sendCopy(frame *[]byte) bool {
	ok := s.send(*frame)
	frameCopies.Put(frame)
	return ok
}

// fail ends a socket whose write failed: nothing more is written to it.
func (s *socket) fail() {
	s.mu.Lock()
	s.done = true
	s.mu.Unlock()
	s.c.CloseNow()
	s.letGo()
}

// Serve upgrades a waiter's request (one that IsWaitingSocket) and hands the socket
// to the hub; release, if not nil, is called once the socket is over (a per-address
// connection count, say). The handler returns at once: the socket lives on in the
// hub's idle watch or its reader goroutine (see socket), and the request, its Caddy
// state and the deep stack that served it are not kept for the hours a waiter may
// wait.
func (hb *Hub) Serve(w http.ResponseWriter, r *http.Request, id queue.VisitorID, st queue.Status, release func()) error {
	if isExtendedConnect(r) {
		// The stream ends with the handler: it returns once the socket is over.
		w, r, stream := overStream(w, r)
		err := hb.Serve(w, r, id, st, release)
		if err != nil || !stream.taken() {
			stream.Close() // the library refused the upgrade, and answered it
		}
		<-stream.done
		return err
	}
	s := &socket{hb: hb, id: id, release: release}
	sb := &smallBuffers{ResponseWriter: w, wire: &s.wire}
	c, err := websocket.Accept(sb, r, &websocket.AcceptOptions{Subprotocols: []string{Subprotocol}})
	if err != nil {
		if release != nil {
			release()
		}
		return nil // Accept has answered the request (bad handshake or cross-origin)
	}
	c.SetReadLimit(maxClientMessage)
	s.c, s.conn, s.raw, s.br = c, sb.conn, rawTCP(sb.conn), sb.br
	if tc, ok := sb.conn.(*tls.Conn); ok {
		s.underTLS = rawTCP(tc.NetConn())
	}
	if st.Position == 0 {
		// A no-show its socket alone does not bring back (queue.Store.Listen): the
		// page asks with a request, which does.
		c.Close(closeMissed, "turn missed")
		s.end()
		return nil
	}
	if !hb.add(id, st.Ticket, s) {
		c.Close(websocket.StatusServiceRestart, "reconnect")
		s.end()
		return nil
	}
	// The first position goes out at once, not at the next push round, with the
	// counts of the store call just made for this waiter (not the last round's), and
	// the message to the line with it (after add: a change from now on is sent by the
	// hub too).
	v := hb.room.Teller(hb.room.Now())(st.Position)
	v.Type, v.Message = "position", ""
	v.Active, v.Waiting, v.Returned = st.Active, max(st.Waiting, st.Position), st.Returned
	s.push(appendFrame(&v, nil))
	hb.greet(s)
	// Bytes that came with the upgrade wait in front of the descriptor, where park
	// cannot see them (coder/websocket puts them there); the first read takes them
	// all into s.br, and the reader parks after it.
	if sb.early || !s.park() {
		go s.read()
	}
	return nil
}

// read reads the client's messages until none is buffered, then parks the socket
// (idle.go) and ends; or until the connection ends, whoever ends it, and lets go of
// the socket. A "leave" gives up the place at once.
func (s *socket) read() {
	for {
		typ, data, err := s.c.Read(context.Background())
		if err != nil || !s.heard(typ, data) {
			s.end()
			return
		}
		if s.park() {
			return
		}
	}
}

// heard acts on a message from the client, and reports whether the socket goes on.
func (s *socket) heard(typ websocket.MessageType, data []byte) bool {
	hb := s.hb
	if typ == websocket.MessageText && !utf8.Valid(data) {
		// RFC 6455 8.1: text that is not UTF-8 fails the connection. The place is
		// kept: the page reconnects.
		s.c.Close(websocket.StatusInvalidFramePayloadData, "text is not UTF-8")
		return false
	}
	var msg struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(data, &msg) != nil || msg.Type != "leave" {
		return true // unknown messages are ignored, so the protocol can grow
	}
	if !hb.beginCall() {
		return false // the room is stopping: the page leaves through the next one
	}
	left, err := hb.store.Leave(context.Background(), s.id) // the store bounds every call
	hb.endCall()
	if err != nil {
		hb.room.StoreError("leave", err)
		return true
	}
	if left { // a repeated leave frees nothing and counts once
		hb.room.Left(s.id)
	}
	// Other tabs of this waiter learn it at the next push round.
	s.leave()
	return true
}

// end lets go of a socket whose connection is over.
func (s *socket) end() {
	s.hb.remove(s.id, s)
	if s.release != nil {
		s.release()
	}
	s.c.CloseNow()
}

// send writes frame, bounded by writeTimeout.
func (s *socket) send(frame []byte) bool {
	s.wire.Lock()
	return s.sendHeld(frame)
}

// sendHeld writes b to the connection with the wire already held, and lets go of it:
// a frame, or the unsent end of one a push began. The bound is a deadline on the
// connection, not a context: a timer context kept per socket was 1.5 KiB of what each
// waiter cost. The deadline stays set: over TLS, crypto/tls writes on its own (its
// answer to a KeyUpdate), and the last write's deadline bounds that write too. The
// library's writes set their own (wireWriter), so a stale one never cuts them short.
func (s *socket) sendHeld(b []byte) bool {
	defer s.wire.Unlock()
	if s.conn.SetWriteDeadline(time.Now().Add(writeTimeout)) != nil {
		return false
	}
	_, err := s.conn.Write(b)
	return err == nil
}

// ServeAdmitted answers the WebSocket of a waiter who was admitted while it was away:
// it says so at once and closes.
func (hb *Hub) ServeAdmitted(w http.ResponseWriter, r *http.Request) error {
	if isExtendedConnect(r) {
		w, r, stream := overStream(w, r)
		defer stream.Close()
		return hb.ServeAdmitted(w, r)
	}
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{Subprotocol}})
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	_ = c.Write(ctx, websocket.MessageText, admittedMessage)
	c.Close(websocket.StatusNormalClosure, "admitted")
	return nil
}

// smallBuffers is the ResponseWriter a waiting socket's upgrade sees: its Hijack hands
// the connection over with small buffers instead of net/http's, carrying over anything
// already read, writing through the socket's wire lock, and keeps the connection for
// the socket's own writes.
type smallBuffers struct {
	http.ResponseWriter
	wire  *sync.Mutex
	conn  net.Conn
	br    *bufio.Reader
	early bool // the client's first bytes came with the upgrade
}

func (sb *smallBuffers) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(sb.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	if err := brw.Flush(); err != nil {
		conn.Close()
		return nil, nil, err
	}
	br := bufio.NewReaderSize(conn, socketReadBuffer)
	if n := brw.Reader.Buffered(); n > 0 {
		// The bytes go into the new buffer itself, not merely in front of conn:
		// coder/websocket keeps what is buffered and swaps the reader's source.
		early, _ := brw.Reader.Peek(n)
		br = bufio.NewReaderSize(io.MultiReader(bytes.NewReader(bytes.Clone(early)), conn), max(n, socketReadBuffer))
		if _, err := br.Peek(n); err != nil {
			conn.Close()
			return nil, nil, err
		}
	}
	sb.conn, sb.br, sb.early = conn, br, brw.Reader.Buffered() > 0
	return conn, bufio.NewReadWriter(br, bufio.NewWriterSize(wireWriter{conn, sb.wire}, socketWriteBuffer)), nil
}

// Unwrap lets http.ResponseController reach the wrapped writer's other abilities.
func (sb *smallBuffers) Unwrap() http.ResponseWriter { return sb.ResponseWriter }
