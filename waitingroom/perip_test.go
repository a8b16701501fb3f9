package waitingroom

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/coder/websocket"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/push"
)

// visitFrom is a new visitor's request from the given address.
func (tr *testRoom) visitFrom(addr string) *httptest.ResponseRecorder {
	tr.t.Helper()
	r := httptest.NewRequest(http.MethodGet, "http://shop.example/", nil)
	r.RemoteAddr = addr + ":40000"
	r.Header.Set("Accept", "application/json")
	w := httptest.NewRecorder()
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error { return nil })
	if err := serveAsCaddy(tr.h, w, r, next); err != nil {
		tr.t.Fatal(err)
	}
	return w
}

// serveAsCaddy serves r as Caddy's server does without handle_errors: a handler error
// is answered with its status alone, on the same ResponseWriter (so the headers the
// handler set stay). Any error but a 429 is returned.
func serveAsCaddy(h *Handler, w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	err := h.ServeHTTP(w, r, next)
	var he caddyhttp.HandlerError
	if errors.As(err, &he) && he.StatusCode == http.StatusTooManyRequests {
		w.WriteHeader(he.StatusCode)
		return nil
	}
	return err
}

// One address may start at most max_joins_per_ip new visitors per window; the ones
// over it are turned away with 429 and leave no trace in the room. Other addresses,
// and the same address after the window, are unaffected.
func TestMaxJoinsPerIP(t *testing.T) {
	tr := newTestRoomWith(t, 1, func(h *Handler) {
		h.PerIP = &PerIP{MaxJoins: 3, JoinWindow: caddy.Duration(time.Minute)}
	})
	for i := range 3 {
		if w := tr.visitFrom("203.0.113.7"); w.Code == http.StatusTooManyRequests {
			t.Fatalf("join %d of 3 refused", i+1)
		}
	}
	before, _ := tr.h.store.Stats(context.Background())
	w := tr.visitFrom("203.0.113.7")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" || len(w.Result().Cookies()) != 0 {
		t.Fatalf("fourth join from one address: %d, Retry-After %q, cookies %v", w.Code, w.Header().Get("Retry-After"), w.Result().Cookies())
	}
	if after, _ := tr.h.store.Stats(context.Background()); after != before {
		t.Fatalf("a refused join changed the room: %+v -> %+v", before, after)
	}
	if w := tr.visitFrom("198.51.100.9"); w.Code == http.StatusTooManyRequests {
		t.Fatal("another address was refused")
	}
	tr.clock.Advance(time.Minute)
	if w := tr.visitFrom("203.0.113.7"); w.Code == http.StatusTooManyRequests {
		t.Fatal("the address was still refused after its window")
	}
}

// One address may hold at most max_connections_per_ip waiting WebSockets; the next
// upgrade is refused with 429 (the page falls back to polling), and a slot frees when a
// socket closes.
func TestMaxConnectionsPerIP(t *testing.T) {
	tr := newTestRoomWith(t, 1, func(h *Handler) { h.PerIP = &PerIP{MaxConnections: 2} })
	tr.visit("", "")
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error { return nil })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _ = serveAsCaddy(tr.h, w, r, next) }))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dial := func() (*websocket.Conn, *http.Response, error) {
		_, cookie := tr.visit("", "application/json")
		return websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), &websocket.DialOptions{
			Subprotocols: []string{push.Subprotocol},
			HTTPHeader:   http.Header{"Cookie": {tr.h.Cookie.Name + "=" + cookie}},
		})
	}
	var open []*websocket.Conn
	for i := range 2 {
		c, _, err := dial()
		if err != nil {
			t.Fatalf("socket %d of 2: %v", i+1, err)
		}
		if _, _, err := c.Read(ctx); err != nil { // the first position: the socket is registered
			t.Fatal(err)
		}
		open = append(open, c)
	}
	if _, resp, err := dial(); err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("third socket from one address: %v %v", resp, err)
	}
	open[0].Close(websocket.StatusNormalClosure, "")
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, _, err := dial()
		if err == nil {
			c.CloseNow()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no socket allowed after one closed: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	open[1].CloseNow()
}

// Cookie-less clients hammering the page take tickets they never use again; they must
// not push real waiters back for longer than queue_ttl. 10,000 such requests arrive
// amid 100 real waiters who keep in touch; once queue_ttl has passed, the abandoned
// tickets, never heard from after their first answer, are gone (not kept for
// away_ttl) and every real waiter is back among the first 100.
func TestCookielessFloodExpires(t *testing.T) {
	tr := newTestRoom(t, 1)
	tr.visit("", "") // holds the only slot
	var real []string
	for i := range 10_100 {
		if i%101 == 0 {
			_, c := tr.visit("", "application/json")
			real = append(real, c)
			continue
		}
		tr.visit("", "application/json") // a client that drops its cookie
	}
	if len(real) != 100 {
		t.Fatalf("%d real waiters", len(real))
	}
	if last := tr.queued(real[99]); last.Position < 10_000 {
		t.Fatalf("the last real waiter is at %d amid the flood; the test needs the flood ahead of it", last.Position)
	}
	// The real waiters keep in touch (their pages poll) while queue_ttl passes.
	for step := time.Duration(0); step <= time.Duration(tr.h.QueueTTL); step += 10 * time.Second {
		tr.clock.Advance(10 * time.Second)
		for _, c := range real {
			tr.queued(c)
		}
	}
	tr.step()
	for i, c := range real {
		if v := tr.queued(c); v.Position != i+1 {
			t.Fatalf("after queue_ttl, real waiter %d is at %d, want %d", i+1, v.Position, i+1)
		}
	}
	if st, _ := tr.h.store.Stats(context.Background()); st.Waiting != 100 || st.Away != 0 {
		t.Fatalf("after queue_ttl: %d waiting and %d away, want the 100 real ones waiting and the flood gone",
			st.Waiting, st.Away)
	}
}

// A bot that keeps the cookies of a cookie-less flood and replays them within
// away_ttl cannot put its places back ahead of the real waiters: a place never heard
// from after its first answer is gone at queue_ttl, so each replay is a new visitor at
// the back. 2,000 places are taken, then one real visitor joins behind them and keeps
// in touch; after queue_ttl the bot replays every cookie, and the real visitor stays
// at position 1 with all 2,000 behind it.
func TestReplayedFloodDoesNotComeBackAhead(t *testing.T) {
	tr := newTestRoomWith(t, 1, func(h *Handler) { h.SessionTTL = caddy.Duration(time.Hour) })
	tr.visit("", "") // holds the only slot
	const flood = 2000
	bot := make([]string, flood)
	for i := range bot {
		_, bot[i] = tr.visit("", "application/json")
	}
	_, real := tr.visit("", "application/json")
	if v := tr.queued(real); v.Position != flood+1 {
		t.Fatalf("the real visitor joined at %d, want %d behind the flood", v.Position, flood+1)
	}
	for range 4 { // 40 s: past queue_ttl (30 s), well within away_ttl (10 m)
		tr.clock.Advance(10 * time.Second)
		tr.queued(real)
		tr.step()
	}
	if v := tr.queued(real); v.Position != 1 {
		t.Fatalf("after queue_ttl the real visitor is at %d, want 1", v.Position)
	}
	behind := 0
	for i, c := range bot {
		v := tr.queued(c)
		if v.Returned || v.Position <= 1 {
			t.Fatalf("replayed cookie %d came back at %d (returned %v), ahead of the real visitor", i, v.Position, v.Returned)
		}
		behind++
	}
	if v := tr.queued(real); v.Position != 1 || v.Waiting != flood+1 || behind != flood {
		t.Fatalf("after %d replays the real visitor is at %d of %d waiting, want 1 of %d", behind, v.Position, v.Waiting, flood+1)
	}
}
