package waitingroom

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/zap"
)

// subprotocol is the WebSocket subprotocol of the waiting page. The room takes over only
// upgrades that ask for it, so a site's own WebSockets pass through untouched.
const subprotocol = "waiting-room.v1"

const (
	// maxClientMessage bounds what a client may send; the only message is a short
	// {"type":"leave"}.
	maxClientMessage = 512
	// writeTimeout bounds one message write, so a stalled client costs a goroutine for
	// seconds, not forever.
	writeTimeout = 5 * time.Second
	// The buffers of an upgraded connection. net/http hands a hijacked connection over
	// with the 4 KiB buffers it served the request with; a waiting socket reads a few
	// short client messages and writes positions of ~200 bytes, and 8 KiB of buffers
	// would be most of what each of 100,000 waiters costs. A position fits the write
	// buffer, so it goes out in one write; a longer frame only takes two. The read
	// buffer holds a leave or a control frame; a longer frame reads through it.
	socketReadBuffer  = 128
	socketWriteBuffer = 512
)

// Close codes the page understands.
const (
	// closeLost: the waiter's place is gone (left from another tab, expired, removed);
	// the page polls and rejoins.
	closeLost websocket.StatusCode = 4001
)

// Messages the server sends besides positions.
var admittedMessage = []byte(`{"type":"admitted"}`)

// socket is one open waiting WebSocket. The hub never writes to the connection itself:
// it leaves the news here, and a writer goroutine of the socket's own writes it, so
// one slow client never holds up the pushes to the others. The writer runs only while
// there is news (a waiter hears something every 2 s at most, for microseconds), so an
// idle socket costs one goroutine, its reader, with a shallow stack: at 100,000
// waiters, goroutines and their stacks are most of the memory.
type socket struct {
	hb      *hub
	c       *websocket.Conn
	conn    net.Conn // c's connection, for write deadlines
	id      VisitorID
	release func() // gives back the address's connection count; nil without a cap

	mu       sync.Mutex
	pending  *view // the latest position not yet written
	admitted bool
	lost     bool
	closing  bool
	writing  bool // a writer goroutine is on its way or running
	done     bool // the writer closed the connection: nothing more is written

	// Kept by the hub goroutine only: the position it last offered, and when.
	lastPosition int
	lastOffered  time.Time
}

// resendAfter is how long an unchanged position goes unsent. A waiter must hear
// something at least every maxSilence, and positions go out only at push rounds, so
// the resend must happen at the last round before maxSilence: pushEvery before it. Half
// a round earlier still, so a round that fires a little early or late lands on the
// same side: the silence is 1.5 s, and stays within 2 s if a round runs up to half a
// second late.
const resendAfter = maxSilence - pushEvery - pushEvery/2

// due reports whether a position message, offered at now, is to be written: the
// position changed, or the waiter has heard nothing for resendAfter. If so it is
// recorded as offered. The other figures (people waiting, the ETA) ride along and are
// never older than that: they change with every arrival, and pushing them at once
// would cost, during a surge of arrivals, a message per waiter per round (200,000 a
// second at 100,000 waiters) to move a count. Hub goroutine only.
func (s *socket) due(position int, now time.Time) bool {
	if position == s.lastPosition && now.Sub(s.lastOffered) < resendAfter {
		return false
	}
	s.lastPosition, s.lastOffered = position, now
	return true
}

// post hands v to the writer; v is not changed afterwards (the sockets of one waiter
// share it).
func (s *socket) post(v *view) {
	s.mu.Lock()
	s.pending = v
	start := s.wakeLocked()
	s.mu.Unlock()
	if start {
		go s.write()
	}
}

func (s *socket) admit() {
	s.mu.Lock()
	s.admitted = true
	start := s.wakeLocked()
	s.mu.Unlock()
	if start {
		go s.write()
	}
}

func (s *socket) lose() {
	s.mu.Lock()
	s.lost = true
	start := s.wakeLocked()
	s.mu.Unlock()
	if start {
		go s.write()
	}
}

func (s *socket) shutdown() {
	s.mu.Lock()
	s.closing = true
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
	for {
		s.mu.Lock()
		v, admitted, lost, closing := s.pending, s.admitted, s.lost, s.closing
		s.pending = nil
		s.done = admitted || lost || closing
		if v == nil && !s.done {
			s.writing = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		switch {
		case admitted:
			s.send(admittedMessage)
			s.c.Close(websocket.StatusNormalClosure, "admitted")
			return
		case closing:
			s.c.Close(websocket.StatusServiceRestart, "reconnect")
			return
		case lost:
			s.c.Close(closeLost, "place lost")
			return
		}
		if !s.sendView(*v) {
			s.mu.Lock()
			s.done = true
			s.mu.Unlock()
			s.c.CloseNow()
			return
		}
	}
}

// serve upgrades a waiter's request and hands the socket to the hub. The handler
// returns at once: the socket lives on in its reader goroutine (see socket), and the
// request, its Caddy state and the deep stack that served it are not kept for the
// hours a waiter may wait.
func (hb *hub) serve(w http.ResponseWriter, r *http.Request, id VisitorID, st Status) error {
	var release func()
	if cap := hb.rm.h.PerIP; cap != nil && cap.MaxConnections > 0 {
		addr := clientAddr(r)
		if !hb.rm.ips.openConn(addr, cap.MaxConnections) {
			return tooMany(w, time.Duration(hb.rm.h.refreshSeconds())*time.Second)
		}
		release = func() { hb.rm.ips.closeConn(addr) }
	}
	sb := &smallBuffers{ResponseWriter: w}
	c, err := websocket.Accept(sb, r, &websocket.AcceptOptions{Subprotocols: []string{subprotocol}})
	if err != nil {
		if release != nil {
			release()
		}
		return nil // Accept has answered the request (bad handshake or cross-origin)
	}
	c.SetReadLimit(maxClientMessage)
	s := &socket{hb: hb, c: c, conn: sb.conn, id: id, release: release}
	if !hb.add(id, st.Ticket, s) {
		c.Close(websocket.StatusServiceRestart, "reconnect")
		s.end()
		return nil
	}
	// The first position goes out at once, not at the next push round.
	v := hb.rm.h.queuedView(st.Position, hb.rm.h.policyAt(hb.rm.h.clock.Now()))
	s.post(&v)
	go s.read()
	return nil
}

// read reads the client's messages until the connection ends, whoever ends it; a
// "leave" gives up the place at once.
func (s *socket) read() {
	defer s.end()
	hb := s.hb
	for {
		_, data, err := s.c.Read(context.Background())
		if err != nil {
			return
		}
		var msg struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(data, &msg) != nil || msg.Type != "leave" {
			continue // unknown messages are ignored, so the protocol can grow
		}
		left, err := hb.rm.store.Leave(context.Background(), s.id) // the store bounds every call
		if err != nil {
			hb.rm.storeError("leave", err)
			continue
		}
		if left { // a repeated leave frees nothing and counts once
			hb.rm.kick()
			hb.rm.metrics.abandoned.Inc()
			if ce := hb.rm.logger.Check(zap.DebugLevel, "waiter left the queue"); ce != nil {
				ce.Write(zap.String("room", hb.rm.h.Name), zap.Stringer("visitor", s.id))
			}
		}
		// Other tabs of this waiter learn it at the next push round.
		s.lose()
	}
}

// end lets go of a socket whose connection is over.
func (s *socket) end() {
	s.hb.remove(s.id, s)
	if s.release != nil {
		s.release()
	}
	s.c.CloseNow()
}

func (s *socket) sendView(v view) bool {
	v.Type = "position"
	return s.send(v.appendJSON(nil))
}

// send writes one message, bounded by writeTimeout. The bound is a deadline on the
// connection, not a context: coder/websocket keeps a write's context until the next
// write, and a timer context kept per socket was 1.5 KiB of what each waiter cost. The
// deadline is cleared afterwards, so that the library's own writes (a pong, the close
// frame) are not cut short by a stale one.
func (s *socket) send(b []byte) bool {
	if s.conn.SetWriteDeadline(time.Now().Add(writeTimeout)) != nil {
		return false
	}
	err := s.c.Write(context.Background(), websocket.MessageText, b)
	_ = s.conn.SetWriteDeadline(time.Time{})
	return err == nil
}

// serveAdmitted answers the WebSocket of a waiter who was admitted while it was away:
// it says so at once and closes.
func (hb *hub) serveAdmitted(w http.ResponseWriter, r *http.Request) error {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{subprotocol}})
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
// already read, and keeps the connection for the socket's write deadlines.
type smallBuffers struct {
	http.ResponseWriter
	conn net.Conn
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
	sb.conn = conn
	return conn, bufio.NewReadWriter(br, bufio.NewWriterSize(conn, socketWriteBuffer)), nil
}

// Unwrap lets http.ResponseController reach the wrapped writer's other abilities.
func (sb *smallBuffers) Unwrap() http.ResponseWriter { return sb.ResponseWriter }
