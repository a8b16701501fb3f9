package waitingroom

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
)

// What a waiting page's WebSocket client sends is decoded inline in readClient, so the
// fuzz target goes through a real WebSocket against the handler: a queued waiter
// connects, sends one message, and closes. Only a leave may cost the place; anything
// else (garbage, other types, oversized) leaves the waiter exactly where it stood.
func FuzzClientMessage(f *testing.F) {
	for _, s := range []string{
		`{"type":"leave"}`, `{"type":"Leave"}`, `{"type":"leave","type":"stay"}`, `{"Type":"leave"}`,
		`{"type":"ping"}`, `{}`, `null`, `[]`, `"leave"`, `{"type":`, "\x00\xff",
		`{"type":"leave"}` + strings.Repeat(" ", maxClientMessage),
	} {
		f.Add([]byte(s), false)
	}
	f.Add([]byte(`{"type":"leave"}`), true)

	tr := newTestRoom(f, 1)
	tr.visit("", "") // the only slot is taken and, with the clock standing still, stays taken
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error { return nil })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = tr.h.ServeHTTP(w, r, next)
	}))
	f.Cleanup(srv.Close)
	wsURL := "ws" + strings.TrimPrefix(srv.URL, "http")
	keys := tr.h.room.keys.Load()
	ctx := context.Background()

	f.Fuzz(func(t *testing.T, msg []byte, binary bool) {
		// Not tr.visit: the test room's helpers report to the F, not to this run's T.
		r := httptest.NewRequest(http.MethodGet, "http://shop.example/", nil)
		r.Header.Set("Accept", "application/json")
		w := httptest.NewRecorder()
		if err := tr.h.ServeHTTP(w, r, next); err != nil {
			t.Fatal(err)
		}
		var cookie string
		for _, c := range w.Result().Cookies() {
			if c.Name == tr.h.Cookie.Name {
				cookie = c.Value
			}
		}
		tok, ok := keys.Open(cookie, tr.clock.Now())
		if !ok || tok.State != queue.Queued {
			t.Fatalf("a new visitor to a full room got cookie %q", cookie)
		}
		defer func() { _, _ = tr.h.store.Leave(ctx, tok.ID) }() // keep the queue short
		before, _ := tr.h.store.Status(ctx, tok.ID, tr.clock.Now())

		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		c, _, err := websocket.Dial(dctx, wsURL, &websocket.DialOptions{
			Subprotocols: []string{subprotocol},
			HTTPHeader:   http.Header{"Cookie": {tr.h.Cookie.Name + "=" + cookie}},
		})
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		typ := websocket.MessageText
		if binary {
			typ = websocket.MessageBinary
		}
		_ = c.Write(dctx, typ, msg)
		// The server reads in order and answers our close only after it has handled the
		// message, so once Close returns the message has had its effect.
		_ = c.Close(websocket.StatusNormalClosure, "")

		after, _ := tr.h.store.Status(ctx, tok.ID, tr.clock.Now())
		if isLeave(msg) {
			if after.State != queue.Unknown {
				t.Fatalf("a waiter that sent %q still holds %+v", msg, after)
			}
			return
		}
		if after.State != queue.Queued || after.Ticket != before.Ticket {
			t.Fatalf("a waiter that sent %q went from %+v to %+v", msg, before, after)
		}
	})
}

// isLeave is what readClient must take for a leave: a message of at most
// maxClientMessage bytes holding a JSON object whose type is "leave" (as Go's JSON
// matches it: the key's case does not matter and the last duplicate wins).
func isLeave(msg []byte) bool {
	var m struct {
		Type string `json:"type"`
	}
	return len(msg) <= maxClientMessage && json.Unmarshal(msg, &m) == nil && m.Type == "leave"
}

// One waiter leaving is one abandonment, however many leave messages its page sends
// before the server closes the socket (a page, or a script, may repeat itself).
func TestLeaveMessagesCountOnce(t *testing.T) {
	tr := newTestRoom(t, 1)
	tr.visit("", "")
	_, cookie := tr.visit("", "application/json")
	srv := serveRoom(t, tr, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := dialWaiter(ctx, t, tr, srv, cookie)
	for i := 0; i < 50; i++ {
		if c.Write(ctx, websocket.MessageText, []byte(`{"type":"leave"}`)) != nil {
			break // the server closed the socket: that is the point
		}
	}
	_ = c.Close(websocket.StatusNormalClosure, "")

	reg := prometheus.NewRegistry()
	reg.MustRegister(tr.h.room.metrics.abandoned)
	families, err := reg.Gather()
	if err != nil || len(families) != 1 || len(families[0].GetMetric()) != 1 {
		t.Fatalf("reading the abandoned counter: %v %v", families, err)
	}
	if n := families[0].GetMetric()[0].GetCounter().GetValue(); n != 1 {
		t.Fatalf("one waiter leaving was counted as %v abandonments", n)
	}
}
