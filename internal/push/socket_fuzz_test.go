package push

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
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
		"{\"tYpe\":\"leave\",\"\xc8\":0}", // a leave, but not UTF-8: the connection fails, the place stays
	} {
		f.Add([]byte(s), false)
	}
	f.Add([]byte(`{"type":"leave"}`), true)
	f.Add([]byte("{\"type\":\"leave\",\"\xc8\":0}"), true) // binary: no UTF-8 rule, a leave

	tr := newTestRoom(f, 1)
	tr.join() // the only slot is taken and, with the clock standing still, stays taken
	srv := serveRoom(f, tr, nil)
	wsURL := "ws" + strings.TrimPrefix(srv.URL, "http")
	ctx := context.Background()

	f.Fuzz(func(t *testing.T, msg []byte, binary bool) {
		// Not tr.join: the test room's helpers report to the F, not to this run's T.
		id := queue.NewVisitorID()
		if st, err := tr.store.Join(ctx, id, tr.Now(), tr.lim); err != nil || st.State != queue.Queued {
			t.Fatalf("a new visitor to a full room: %+v %v", st, err)
		}
		cookie := id.String()
		tok := struct{ ID queue.VisitorID }{id}
		defer func() { _, _ = tr.store.Leave(ctx, tok.ID) }() // keep the queue short
		before, _ := tr.store.Status(ctx, tok.ID, tr.Now())

		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		c, _, err := websocket.Dial(dctx, wsURL, &websocket.DialOptions{
			Subprotocols: []string{Subprotocol},
			HTTPHeader:   http.Header{"Cookie": {cookieName + "=" + cookie}},
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

		after, _ := tr.store.Status(ctx, tok.ID, tr.Now())
		if isLeave(msg, binary) {
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

// isLeave is what the socket must take for a leave: a message of at most
// maxClientMessage bytes holding a JSON object whose type is "leave" (as Go's JSON
// matches it: the key's case does not matter and the last duplicate wins), and, sent
// as text, valid UTF-8: text that is not fails the connection (RFC 6455 8.1), and
// the place is kept for the page to reconnect.
func isLeave(msg []byte, binary bool) bool {
	var m struct {
		Type string `json:"type"`
	}
	return len(msg) <= maxClientMessage && (binary || utf8.Valid(msg)) &&
		json.Unmarshal(msg, &m) == nil && m.Type == "leave"
}

// One waiter leaving is one abandonment, however many leave messages its page sends
// before the server closes the socket (a page, or a script, may repeat itself).
func TestLeaveMessagesCountOnce(t *testing.T) {
	tr := newTestRoom(t, 1)
	tr.join()
	cookie := tr.join()
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

	// The server reads in order: once the socket is gone from the hub, every leave it
	// will ever read has been read.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		tr.hub.mu.Lock()
		n := len(tr.hub.waiters)
		tr.hub.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the socket of a waiter who left is still in the hub")
		}
	}
	if n := tr.left.Load(); n != 1 {
		t.Fatalf("one waiter leaving was told to the room %d times", n)
	}
}
