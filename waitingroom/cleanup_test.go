package waitingroom

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/coder/websocket"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/push"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// stallingStore is the real memory store with a stall on demand: once armed, the next
// Positions call (the hub's round) holds until its caller gives up and then until the
// store is released; once leaveArmed, the next Leave (a waiter's socket) holds until
// the store is released, as a call on a slow Redis outlives its context until the client
// notices. Every call that ends after the store was released is counted: on a real
// store it would have run on a closed client. The stall ends after stallAtMost
// even if the store is never released, so a room that rightly waits for the call
// is held up, not hung.
type stallingStore struct {
	queue.Store
	armed      atomic.Bool
	leaveArmed atomic.Bool
	stalled    chan struct{} // closed when the armed call starts
	returned   chan struct{} // closed when the armed call returns
	released   chan struct{} // closed by the module's release
	once       sync.Once
	late       atomic.Int64 // calls that ended after the release
}

// stallAtMost bounds a stall for a room that waits for the call, as it must; the
// test asserts counts, never this time.
const stallAtMost = 2 * time.Second

type stallingStoreModule struct{}

func (stallingStoreModule) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.waiting_room.stores.stalling_test",
		New: func() caddy.Module { return new(stallingStoreModule) },
	}
}

func (stallingStoreModule) OpenStore(caddy.Context, string) (queue.Store, func(), error) {
	s := &stallingStore{
		Store:    queue.NewMemoryStore(),
		stalled:  make(chan struct{}),
		returned: make(chan struct{}),
		released: make(chan struct{}),
	}
	return s, func() { s.once.Do(func() { close(s.released) }) }, nil
}

func init() { caddy.RegisterModule(stallingStoreModule{}) }

// ended counts a call that returns after the store was released.
func (s *stallingStore) ended() {
	select {
	case <-s.released:
		s.late.Add(1)
	default:
	}
}

func (s *stallingStore) Positions(ctx context.Context, tickets []uint64, out []int) error {
	defer s.ended()
	if s.armed.CompareAndSwap(true, false) {
		defer close(s.returned)
		close(s.stalled)
		<-ctx.Done()
		select {
		case <-s.released:
		case <-time.After(stallAtMost):
		}
		return ctx.Err()
	}
	return s.Store.Positions(ctx, tickets, out)
}

func (s *stallingStore) Leave(ctx context.Context, id queue.VisitorID) (bool, error) {
	defer s.ended()
	if s.leaveArmed.CompareAndSwap(true, false) {
		defer close(s.returned)
		close(s.stalled)
		select {
		case <-s.released:
		case <-time.After(stallAtMost):
		}
	}
	return s.Store.Leave(ctx, id)
}

func (s *stallingStore) Heartbeat(ctx context.Context, ids []queue.VisitorID, now time.Time) error {
	defer s.ended()
	return s.Store.Heartbeat(ctx, ids, now)
}

func (s *stallingStore) Status(ctx context.Context, id queue.VisitorID, now time.Time) (queue.Status, error) {
	defer s.ended()
	return s.Store.Status(ctx, id, now)
}

func (s *stallingStore) Step(ctx context.Context, now time.Time, lim queue.Limits) (queue.StepResult, error) {
	defer s.ended()
	return s.Store.Step(ctx, now, lim)
}

func (s *stallingStore) Stats(ctx context.Context) (queue.Stats, error) {
	defer s.ended()
	return s.Store.Stats(ctx)
}

func (s *stallingStore) Overrides(ctx context.Context) ([]byte, error) {
	defer s.ended()
	return s.Store.Overrides(ctx)
}

func (s *stallingStore) Secret(ctx context.Context, candidate []byte) ([]byte, error) {
	defer s.ended()
	return s.Store.Secret(ctx, candidate)
}

// stallingRoomWithWaiter starts a room of one slot on a stallingStore, fills the slot
// and connects a waiter's socket, registered once its first position has come.
func stallingRoomWithWaiter(ctx context.Context, t *testing.T) (*testRoom, *stallingStore, *websocket.Conn) {
	t.Helper()
	tr := newTestRoomOn(t, 1, json.RawMessage(`{"type":"stalling_test"}`))
	st := tr.h.store.(*stallingStore)
	tr.visit("", "") // holds the only slot
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error { return nil })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _ = serveAsCaddy(tr.h, w, r, next) }))
	t.Cleanup(srv.Close)
	_, cookie := tr.visit("", "application/json")
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), &websocket.DialOptions{
		Subprotocols: []string{push.Subprotocol},
		HTTPHeader:   http.Header{"Cookie": {tr.h.Cookie.Name + "=" + cookie}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	if _, _, err := c.Read(ctx); err != nil {
		t.Fatal(err)
	}
	return tr, st, c
}

// A room stopped while its hub's store call is in flight: Cleanup returns only once
// that call has ended, so no store call ends (or starts) after the store is let go
// of; a second Cleanup changes nothing.
func TestCleanupWaitsForStoreCalls(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr, st, _ := stallingRoomWithWaiter(ctx, t)

	st.armed.Store(true)
	select { // the hub's next round asks for positions
	case <-st.stalled:
	case <-ctx.Done():
		t.Fatal("the hub never asked the store for positions")
	}
	if err := tr.h.Cleanup(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-st.returned:
	case <-ctx.Done():
		t.Fatal("the stalled call never returned")
	}
	if n := st.late.Load(); n != 0 {
		t.Fatalf("%d store calls ended after Cleanup let go of the store", n)
	}
	if !tr.h.room.LastOutageLog().IsZero() {
		t.Fatal("the call the stop itself cut short was logged as the store being unavailable")
	}
	if err := tr.h.Cleanup(); err != nil { // and once more, as Caddy may
		t.Fatal(err)
	}
	if n := st.late.Load(); n != 0 {
		t.Fatalf("%d store calls after a second Cleanup", n)
	}
}

// A room stopped while a waiter's "leave" is with the store: the socket's reader is
// the room's too, so Cleanup returns only once that call has ended.
func TestCleanupWaitsForALeave(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr, st, c := stallingRoomWithWaiter(ctx, t)

	st.leaveArmed.Store(true)
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"leave"}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-st.stalled:
	case <-ctx.Done():
		t.Fatal("the leave never reached the store")
	}
	if err := tr.h.Cleanup(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-st.returned:
	case <-ctx.Done():
		t.Fatal("the stalled leave never returned")
	}
	if n := st.late.Load(); n != 0 {
		t.Fatalf("%d store calls ended after Cleanup let go of the store", n)
	}
}
