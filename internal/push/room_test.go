package push

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// testRoom is a room of the tests' own around a real memory store and a running hub:
// what waitingroom's running room is to the hub, without Caddy. A visitor's "cookie"
// is its id in hex, sent as the cookie named v.
type testRoom struct {
	t     testing.TB
	store *queue.MemoryStore
	hub   *Hub
	lim   queue.Limits
	left  atomic.Int64 // waiters the hub said left from the page
	note  atomic.Pointer[string]

	mu  sync.Mutex
	now time.Time
}

const cookieName = "v"

// newTestRoom is a room of capacity with its hub running.
func newTestRoom(t testing.TB, capacity int) *testRoom { return newRoom(t, capacity, true) }

// newRoom is a room of capacity; with running false, its hub holds sockets but runs
// no rounds.
func newRoom(t testing.TB, capacity int, running bool) *testRoom {
	tr := &testRoom{
		t:     t,
		store: queue.NewMemoryStore(),
		lim:   queue.Limits{Capacity: capacity, SessionTTL: time.Hour, QueueTTL: time.Hour},
		now:   time.Unix(1_800_000_000, 0),
	}
	tr.hub = New(tr, tr.store, 10*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	if running {
		go func() { defer close(done); tr.hub.Run(ctx) }()
	} else {
		close(done)
	}
	t.Cleanup(func() {
		cancel()
		tr.hub.CloseAll()
		<-done
	})
	return tr
}

func (tr *testRoom) Now() time.Time {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.now
}

func (tr *testRoom) Teller(time.Time) func(position int) page.View {
	st, _ := tr.store.Stats(context.Background())
	return func(position int) page.View {
		return page.View{Room: "test", Status: "queued", Position: position, Waiting: max(st.Waiting, position),
			Active: st.Active, Capacity: tr.lim.Capacity, RefreshSeconds: 5}
	}
}

func (tr *testRoom) Left(queue.VisitorID) {
	tr.left.Add(1)
	tr.step()
}

func (tr *testRoom) Message() string {
	if m := tr.note.Load(); m != nil {
		return *m
	}
	return ""
}

func (tr *testRoom) StoreError(op string, err error) { tr.t.Logf("store error during %s: %v", op, err) }

// join sends a new visitor into the room and returns its cookie.
func (tr *testRoom) join() string {
	tr.t.Helper()
	id := queue.NewVisitorID()
	if _, err := tr.store.Join(context.Background(), id, tr.Now(), tr.lim); err != nil {
		tr.t.Fatal(err)
	}
	return id.String()
}

// step runs one admission step, as the room's loop does.
func (tr *testRoom) step() {
	if _, err := tr.store.Step(context.Background(), tr.Now(), tr.lim); err != nil {
		tr.t.Error(err)
	}
}

// serve answers a request as the room does for the waiting socket: a queued visitor's
// upgrade goes to the hub, an admitted one's is told so.
func (tr *testRoom) serve(w http.ResponseWriter, r *http.Request) {
	ck, err := r.Cookie(cookieName)
	if err != nil {
		http.Error(w, "no cookie", http.StatusBadRequest)
		return
	}
	id, err := queue.ParseVisitorID(ck.Value)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	st, err := tr.store.Status(r.Context(), id, tr.Now())
	switch {
	case err != nil:
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	case !IsWaitingSocket(r):
		http.Error(w, "not the waiting socket", http.StatusBadRequest)
	case st.State == queue.Queued:
		_ = tr.hub.Serve(w, r, id, st, nil)
	case st.State == queue.Admitted:
		_ = tr.hub.ServeAdmitted(w, r)
	default:
		http.Error(w, "no place", http.StatusGone)
	}
}

// visitorID is the id behind a cookie of the test room's.
func visitorID(t testing.TB, cookie string) queue.VisitorID {
	t.Helper()
	id, err := queue.ParseVisitorID(cookie)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// serveRoom serves tr on a test server closed with the test; returned, if not nil,
// is called as each request's handler returns.
func serveRoom(t testing.TB, tr *testRoom, returned func()) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tr.serve(w, r)
		if returned != nil {
			returned()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}
