package push

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// readMessage reads frames until the message to the line and returns its text;
// positions read on the way are counted.
func readMessage(ctx context.Context, t *testing.T, c *websocket.Conn) (text string, positions int) {
	t.Helper()
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for the message (after %d positions): %v", positions, err)
		}
		var m struct {
			Type    string  `json:"type"`
			Text    *string `json:"text"`
			Message *string `json:"message"`
		}
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("not a message of the room: %q", data)
		}
		if m.Message != nil {
			t.Fatalf("a %s frame carries the message: %q", m.Type, data)
		}
		switch m.Type {
		case "position":
			positions++
		case "message":
			if m.Text == nil {
				t.Fatalf("a message frame without text: %q", data)
			}
			return *m.Text, positions
		default:
			t.Fatalf("unexpected frame %q", data)
		}
	}
}

// The message to the line reaches every connected socket when it changes, a socket
// that connects later hears it at once, and a cleared message goes out as "".
func TestMessageReachesSocketsAndReconnects(t *testing.T) {
	tr := newTestRoom(t, 1)
	tr.join() // admitted: the rest wait
	srv := serveRoom(t, tr, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var conns []*websocket.Conn
	for range 3 {
		c := dialWaiter(ctx, t, tr, srv, tr.join())
		defer c.CloseNow()
		readView(ctx, t, c)
		conns = append(conns, c)
	}
	hostile := "<img src=x onerror=alert(1)> & \"quotes\"\nline two"
	tr.note.Store(&hostile)
	for i, c := range conns {
		if got, _ := readMessage(ctx, t, c); got != hostile {
			t.Fatalf("socket %d was told %q, want %q", i, got, hostile)
		}
	}

	late := dialWaiter(ctx, t, tr, srv, tr.join())
	defer late.CloseNow()
	if got, _ := readMessage(ctx, t, late); got != hostile {
		t.Fatalf("a socket connecting after the change was told %q, want %q", got, hostile)
	}

	empty := ""
	tr.note.Store(&empty)
	for i, c := range append(conns, late) {
		if got, _ := readMessage(ctx, t, c); got != "" {
			t.Fatalf("socket %d was told %q after the message was cleared", i, got)
		}
	}
}
