package push

import (
	"context"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testalloc"
)

// A push the client's buffers take at once allocates nothing, over plain TCP and over
// TLS: at 100,000 waiters pushes are 60,000 a second, the steady work of an idle room,
// and garbage makes the collector mark every waiter's memory.
//
// The race detector, which CI runs, makes sync.Pool drop one Put in four, so under it a
// plain push may allocate what the pool lost (about 0.5 objects against 2 for a
// closure made per write), and a TLS push, whose records come from crypto/tls's pool
// too, varies too widely (1.4-1.95 objects, against 2.8-3.5 with a closure) to be
// bounded: only the plain push, which writes through the same writeNow, is checked.
func TestPushAllocatesNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		dial func(*testing.T) (context.Context, *websocket.Conn, *socket)
	}{
		{"plain", func(t *testing.T) (context.Context, *websocket.Conn, *socket) {
			return connectedWaiter(t, 60*time.Second)
		}},
		{"TLS", connectedTLSWaiter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, c, s := tc.dial(t)
			readView(ctx, t, c)
			if s.raw == nil && s.tls == nil {
				t.Fatal("the socket has no wire of its own: every push goes to a writer")
			}
			// Few enough short frames that the client's kernel buffers take them all
			// while it reads nothing.
			const pushes = 40
			frame := appendFrame(&page.View{Type: "position", Status: "queued", Position: firstNumbered}, nil)
			allocs := testalloc.Allocs(pushes, func() { s.push(frame) })
			s.mu.Lock()
			handedOver := s.writing
			s.mu.Unlock()
			if handedOver {
				t.Fatal("a push went to the writer: the client's buffers did not take the frames")
			}
			switch {
			case !testalloc.Race && allocs > 0.5:
				t.Errorf("a push the kernel takes at once allocates %.2f objects; want none", allocs)
			case testalloc.Race && tc.name == "plain" && allocs >= 1:
				t.Errorf("a push the kernel takes at once allocates %.2f objects; want what the race detector's pool drops cost, below 1", allocs)
			}
			if err := readNumbered(ctx, c, firstNumbered); err != nil {
				t.Fatal(err)
			}
		})
	}
}
