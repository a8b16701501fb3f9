package waitingroom

import (
	"context"
	"encoding/json"
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
// it leaves the news here and signals, and the socket's own goroutine writes, so one
// slow client never holds up the pushes to the others.
type socket struct {
	notify chan struct{}

	mu       sync.Mutex
	pending  *view // the latest position not yet written
	admitted bool
	lost     bool
	closing  bool

	// Kept by the hub goroutine only: what it last offered and when.
	lastPosition int
	lastWaiting  int
	lastETA      int
	lastOffered  time.Time
}

func newSocket() *socket { return &socket{notify: make(chan struct{}, 1)} }

func (s *socket) signal() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// offer gives the socket a fresh position; it is written if anything the page shows
// changed, or if the waiter has not heard from us for maxSilence.
func (s *socket) offer(v view, now time.Time) {
	eta := -1
	if v.ETASeconds != nil {
		eta = *v.ETASeconds
	}
	if v.Position == s.lastPosition && v.Waiting == s.lastWaiting && eta == s.lastETA &&
		now.Sub(s.lastOffered) < maxSilence {
		return
	}
	s.lastPosition, s.lastWaiting, s.lastETA, s.lastOffered = v.Position, v.Waiting, eta, now
	s.mu.Lock()
	s.pending = &v
	s.mu.Unlock()
	s.signal()
}

func (s *socket) admit() {
	s.mu.Lock()
	s.admitted = true
	s.mu.Unlock()
	s.signal()
}

func (s *socket) lose() {
	s.mu.Lock()
	s.lost = true
	s.mu.Unlock()
	s.signal()
}

func (s *socket) shutdown() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.signal()
}

// take returns what is to be written now.
func (s *socket) take() (v *view, admitted, lost, closing bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, s.pending = s.pending, nil
	return v, s.admitted, s.lost, s.closing
}

// serve upgrades a waiter's request and keeps the socket until the waiter is admitted,
// leaves, loses the place, or the room shuts down.
func (hb *hub) serve(w http.ResponseWriter, r *http.Request, id VisitorID, st Status) error {
	if cap := hb.rm.h.PerIP; cap != nil && cap.MaxConnections > 0 {
		addr := clientAddr(r)
		if !hb.rm.ips.openConn(addr, cap.MaxConnections) {
			return tooMany(w, time.Duration(hb.rm.h.refreshSeconds())*time.Second)
		}
		defer hb.rm.ips.closeConn(addr)
	}
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{subprotocol}})
	if err != nil {
		return nil // Accept has answered the request (bad handshake or cross-origin)
	}
	c.SetReadLimit(maxClientMessage)
	s := newSocket()
	if !hb.add(id, st.Ticket, s) {
		c.Close(websocket.StatusServiceRestart, "reconnect")
		return nil
	}
	defer hb.remove(id, s)

	// The request's context ends when the handler returns; the socket lives on its own.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go hb.readClient(ctx, cancel, c, id, s)

	// The first position goes out at once, not at the next push round.
	hb.send(ctx, c, hb.rm.h.queuedView(st.Position, hb.rm.h.policyAt(hb.rm.h.clock.Now())))
	for {
		select {
		case <-ctx.Done():
			c.CloseNow()
			return nil
		case <-s.notify:
		}
		v, admitted, lost, closing := s.take()
		switch {
		case admitted:
			hb.sendRaw(ctx, c, admittedMessage)
			c.Close(websocket.StatusNormalClosure, "admitted")
			return nil
		case closing:
			c.Close(websocket.StatusServiceRestart, "reconnect")
			return nil
		case lost:
			c.Close(closeLost, "place lost")
			return nil
		case v != nil:
			if !hb.send(ctx, c, *v) {
				c.CloseNow()
				return nil
			}
		}
	}
}

// readClient reads the client's messages until the connection ends; a "leave" gives up
// the place at once.
func (hb *hub) readClient(ctx context.Context, cancel context.CancelFunc, c *websocket.Conn, id VisitorID, s *socket) {
	defer cancel()
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		var msg struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(data, &msg) != nil || msg.Type != "leave" {
			continue // unknown messages are ignored, so the protocol can grow
		}
		left, err := hb.rm.store.Leave(ctx, id)
		if err != nil {
			hb.rm.storeError("leave", err)
			continue
		}
		if left { // a repeated leave frees nothing and counts once
			hb.rm.kick()
			hb.rm.metrics.abandoned.Inc()
			if ce := hb.rm.logger.Check(zap.DebugLevel, "waiter left the queue"); ce != nil {
				ce.Write(zap.String("room", hb.rm.h.Name), zap.Stringer("visitor", id))
			}
		}
		// Other tabs of this waiter learn it at the next push round.
		s.lose()
	}
}

func (hb *hub) send(ctx context.Context, c *websocket.Conn, v view) bool {
	v.Type = "position"
	return hb.sendRaw(ctx, c, v.appendJSON(nil))
}

func (hb *hub) sendRaw(ctx context.Context, c *websocket.Conn, b []byte) bool {
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	return c.Write(ctx, websocket.MessageText, b) == nil
}

// serveAdmitted answers the WebSocket of a waiter who was admitted while it was away:
// it says so at once and closes.
func (hb *hub) serveAdmitted(w http.ResponseWriter, r *http.Request) error {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{subprotocol}})
	if err != nil {
		return nil
	}
	hb.sendRaw(context.Background(), c, admittedMessage)
	c.Close(websocket.StatusNormalClosure, "admitted")
	return nil
}
