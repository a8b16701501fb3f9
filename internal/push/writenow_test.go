package push

import (
	"runtime"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testalloc"
)

// A push the client's buffers take at once allocates nothing over plain TCP: at
// 100,000 waiters pushes are 60,000 a second, the steady work of an idle room, and
// garbage makes the collector mark every waiter's memory.
//
// The race detector, which CI runs, makes sync.Pool drop one Put in four, so under it a
// plain push may allocate what the pool lost (about 0.5 objects against 2 for a
// closure made per write).
func TestPushAllocatesNothing(t *testing.T) {
	ctx, c, s := connectedWaiter(t, 60*time.Second)
	readView(ctx, t, c)
	if s.raw == nil {
		t.Fatal("the socket has no wire of its own: every push goes to a writer")
	}
	// Few enough short frames that the client's kernel buffers take them all while it
	// reads nothing.
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
	case testalloc.Race && allocs >= 1:
		t.Errorf("a push the kernel takes at once allocates %.2f objects; want what the race detector's pool drops cost, below 1", allocs)
	}
	if err := readNumbered(ctx, c, firstNumbered); err != nil {
		t.Fatal(err)
	}
}

// Over TLS a push goes to the socket's writer, never written on the hub's goroutine
// (tlssocket.go), and allocates, pusher and writer together: the copy of the frame
// the writer takes and little more (2 objects in all here; a third is left for the
// writer's goroutine when the runtime has none to reuse). Not bounded under the race
// detector, whose pools drop items at random.
func TestTLSPushAllocatesOnlyTheWritersCopy(t *testing.T) {
	ctx, c, s := connectedTLSWaiter(t)
	readView(ctx, t, c)
	const pushes = 40
	frame := appendFrame(&page.View{Type: "position", Status: "queued", Position: firstNumbered}, nil)
	allocs := testalloc.Allocs(pushes, func() {
		s.push(frame)
		for { // the writer's work counts too: wait for it, allocating nothing
			s.mu.Lock()
			writing := s.writing
			s.mu.Unlock()
			if !writing {
				return
			}
			runtime.Gosched()
		}
	})
	t.Logf("%.2f objects per TLS push and its write", allocs)
	if !testalloc.Race && allocs > 3 {
		t.Errorf("a TLS push and its write allocate %.2f objects; want the frame's copy and at most two more", allocs)
	}
	if err := readNumbered(ctx, c, firstNumbered); err != nil {
		t.Fatal(err)
	}
}
