package waitingroom

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// testRoom is a provisioned handler over a fresh memory store, with a clock the test
// drives and a next handler that records who got through.
type testRoom struct {
	t       testing.TB
	h       *Handler
	clock   *fakeClock
	passed  atomic.Int64
	respond func(w http.ResponseWriter, r *http.Request)
}

var roomSeq atomic.Int64

func newTestRoom(t testing.TB, capacity int) *testRoom {
	t.Helper()
	return newTestRoomOn(t, capacity, nil)
}

func newTestRoomOn(t testing.TB, capacity int, store json.RawMessage) *testRoom {
	t.Helper()
	return newTestRoomWith(t, capacity, func(h *Handler) { h.StoreRaw = store })
}

// newTestRoomWith lets configure change the handler before it is provisioned (after,
// the room's goroutines read it).
func newTestRoomWith(t testing.TB, capacity int, configure func(*Handler)) *testRoom {
	t.Helper()
	clk := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	h := &Handler{
		// A unique name per test: the memory store is pooled by room name.
		Name:       t.Name() + "-" + time.Now().Format("150405.000000") + "-" + string(rune('a'+roomSeq.Add(1)%26)),
		Capacity:   capacity,
		SessionTTL: caddy.Duration(time.Minute),
		QueueTTL:   caddy.Duration(30 * time.Second),
		clock:      clk,
	}
	configure(h)
	if h.logger == nil { // configure may watch the logs
		h.logger = zap.NewNop()
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	if err := h.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = h.Cleanup()
	})
	return &testRoom{t: t, h: h, clock: h.clock.(*fakeClock)} // configure may share a clock
}

// requestWith makes one request to target with the cookie and the headers given
// (name, value pairs), and returns the answer, the cookie it set (or the one sent)
// and what the upstream saw (nil when it saw nothing).
func (tr *testRoom) requestWith(target, cookie string, headers ...string) (*httptest.ResponseRecorder, string, *http.Request) {
	tr.t.Helper()
	r := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	if cookie != "" {
		r.Header.Set("Cookie", tr.h.Cookie.Name+"="+cookie)
	}
	var seen *http.Request
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		seen = r
		tr.passed.Add(1)
		_, err := w.Write([]byte("upstream"))
		return err
	})
	w := httptest.NewRecorder()
	if err := tr.h.ServeHTTP(w, r, next); err != nil {
		tr.t.Fatal(err)
	}
	for _, c := range w.Result().Cookies() {
		if c.Name == tr.h.Cookie.Name {
			cookie = c.Value
		}
	}
	return w, cookie, seen
}

// visit makes one request with the given cookie ("" for none) and Accept header, and
// returns the response and the room cookie it set (or the one sent, if none was set).
func (tr *testRoom) visit(cookie, accept string) (*httptest.ResponseRecorder, string) {
	tr.t.Helper()
	r := httptest.NewRequest(http.MethodGet, "http://shop.example/tickets", nil)
	if cookie != "" {
		r.Header.Set("Cookie", tr.h.Cookie.Name+"="+cookie)
	}
	if accept != "" {
		r.Header.Set("Accept", accept)
	}
	w := httptest.NewRecorder()
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		tr.passed.Add(1)
		if tr.respond != nil {
			tr.respond(w, r)
			return nil
		}
		_, err := w.Write([]byte("upstream"))
		return err
	})
	if err := tr.h.ServeHTTP(w, r, next); err != nil {
		tr.t.Fatal(err)
	}
	for _, c := range w.Result().Cookies() {
		if c.Name == tr.h.Cookie.Name {
			return w, c.Value
		}
	}
	return w, cookie
}

func (tr *testRoom) queued(cookie string) page.View {
	tr.t.Helper()
	w, _ := tr.visit(cookie, "application/json")
	var v page.View
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || v.Status != "queued" {
		tr.t.Fatalf("expected a queued JSON answer, got %d %q", w.Code, w.Body.String())
	}
	return v
}

func (tr *testRoom) step() { tr.h.room.Tick(context.Background()) }

func TestCapacityThenQueueInArrivalOrder(t *testing.T) {
	tr := newTestRoom(t, 3)
	var cookies []string
	for i := 0; i < 8; i++ {
		w, c := tr.visit("", "application/json")
		cookies = append(cookies, c)
		if i < 3 && w.Body.String() != "upstream" {
			t.Fatalf("visitor %d of capacity 3 was not admitted: %q", i+1, w.Body.String())
		}
	}
	if got := tr.passed.Load(); got != 3 {
		t.Fatalf("%d requests reached the upstream, want 3", got)
	}
	for i, c := range cookies[3:] {
		if v := tr.queued(c); v.Position != i+1 {
			t.Fatalf("visitor %d has position %d, want %d", i+4, v.Position, i+1)
		}
	}
	// Admitted visitors keep passing on their cookie.
	if w, _ := tr.visit(cookies[0], ""); w.Body.String() != "upstream" {
		t.Fatal("an admitted visitor was stopped on the next request")
	}
}

func TestWaitingPageHeaders(t *testing.T) {
	tr := newTestRoom(t, 1)
	tr.visit("", "")
	w, _ := tr.visit("", "text/html,application/xhtml+xml,*/*;q=0.8")
	h := w.Header()
	if w.Code != http.StatusOK || h.Get("Cache-Control") != "no-store" || h.Get("Retry-After") == "" {
		t.Fatalf("waiting page: %d, headers %v", w.Code, h)
	}
	if ct := h.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Fatalf("waiting page content type %q", ct)
	}
	if csp := h.Get("Content-Security-Policy"); csp == "" {
		t.Fatal("waiting page without a Content-Security-Policy")
	}
}

// Every kind of bad cookie makes a new visitor: with a full room, that visitor waits at
// the back; it never gets in.
func TestBadCookiesNeverAdmit(t *testing.T) {
	tr := newTestRoom(t, 1)
	_, admitted := tr.visit("", "")
	other := token.NewKeyring("another-room", [][]byte{[]byte("whatever")})
	foreign := other.Seal(token.Token{State: queue.Admitted, ID: queue.NewVisitorID(), Expires: tr.clock.Now().Add(time.Hour)})
	forged := token.NewKeyring(tr.h.Name, [][]byte{[]byte("guessed secret")}).Seal(token.Token{State: queue.Admitted, ID: queue.NewVisitorID(), Expires: tr.clock.Now().Add(time.Hour)})
	tampered := []byte(admitted)
	tampered[10] ^= 0x04
	for name, c := range map[string]string{
		"garbage":        "abc",
		"other room":     foreign,
		"forged secret":  forged,
		"tampered":       string(tampered),
		"admitted, used": admitted + "x",
	} {
		t.Run(name, func(t *testing.T) {
			before := tr.passed.Load()
			w, _ := tr.visit(c, "application/json")
			if tr.passed.Load() != before {
				t.Fatalf("a %s cookie got through: %q", name, w.Body.String())
			}
		})
	}
}

func TestLeaveAndSessionExpiryAdmitTheHead(t *testing.T) {
	tr := newTestRoom(t, 1)
	_, first := tr.visit("", "")
	_, second := tr.visit("", "")
	_, third := tr.visit("", "")
	if tr.queued(second).Position != 1 || tr.queued(third).Position != 2 {
		t.Fatal("unexpected starting positions")
	}

	// The first visitor's session lapses; the next step admits the head.
	tr.clock.Advance(time.Minute + time.Second)
	tr.h.store.Heartbeat(context.Background(), nil, tr.clock.Now())
	tr.queued(second) // heard from: keeps the place
	tr.queued(third)
	tr.step()
	if w, _ := tr.visit(second, ""); w.Body.String() != "upstream" {
		t.Fatalf("head not admitted after the session expired: %q", w.Body.String())
	}
	if w, _ := tr.visit(first, "application/json"); w.Body.String() == "upstream" {
		t.Fatal("the expired visitor still got in")
	}
	if v := tr.queued(third); v.Position != 1 {
		t.Fatalf("third visitor at %d after the head moved, want 1", v.Position)
	}
}

func TestRevokeHeaderFreesTheSlot(t *testing.T) {
	tr := newTestRoom(t, 1)
	_, buyer := tr.visit("", "")
	_, waiter := tr.visit("", "")
	tr.respond = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Waiting-Room-Command", "revoke")
		_, _ = w.Write([]byte("thanks for your order"))
	}
	w, _ := tr.visit(buyer, "")
	tr.respond = nil
	if w.Header().Get("Waiting-Room-Command") != "" {
		t.Fatal("the revoke command reached the client")
	}
	tr.step()
	if w, _ := tr.visit(waiter, ""); w.Body.String() != "upstream" {
		t.Fatalf("the waiter was not admitted after the revoke: %q", w.Body.String())
	}
	// The revoked visitor's old cookie no longer passes, even on the instance that
	// had cached its session.
	if w, _ := tr.visit(buyer, "application/json"); w.Body.String() == "upstream" {
		t.Fatal("a revoked visitor got in again")
	}
}

// The admitted hot path must not touch the store on every request.
func TestAdmittedRequestsTouchTheStoreRarely(t *testing.T) {
	tr := newTestRoomOn(t, 1, json.RawMessage(`{"type":"counting_test"}`))
	counting := tr.h.store.(*countingStore)
	_, c := tr.visit("", "")
	for i := 0; i < 1000; i++ {
		tr.visit(c, "")
		if i%100 == 0 {
			tr.clock.Advance(time.Second)
		}
	}
	// 10 s of fake time at one touch per queue.TouchEvery (5 s): at most 2 or 3 touches.
	if n := counting.touches.Load(); n > 3 {
		t.Fatalf("1000 admitted requests over 10s made %d store touches", n)
	}
	if tr.passed.Load() != 1001 {
		t.Fatalf("%d of 1001 admitted requests passed", tr.passed.Load())
	}
}

// A store whose session check fails (a hung Redis answers nothing within timeout)
// must not be asked again on every admitted request: each such request waits the
// whole timeout. The caddytest TestMultiRedisHangs holds this with a real hung Redis.
func TestFailedTouchIsThrottledToo(t *testing.T) {
	tr := newTestRoomOn(t, 1, json.RawMessage(`{"type":"counting_test"}`))
	counting := tr.h.store.(*countingStore)
	_, c := tr.visit("", "")
	counting.failTouch.Store(true)
	for i := 0; i < 1000; i++ {
		tr.visit(c, "")
		if i%100 == 0 {
			tr.clock.Advance(time.Second)
		}
	}
	if n := counting.touches.Load(); n > 3 {
		t.Fatalf("1000 admitted requests over 10s against a failing store made %d store touches, want one per %v", n, queue.TouchEvery)
	}
	if n := counting.touches.Load(); n == 0 {
		t.Fatal("no touch reached the store in 10s: the session was never checked")
	}
	if tr.passed.Load() != 1001 {
		t.Fatalf("%d of 1001 admitted requests passed", tr.passed.Load())
	}
}

// countingStore counts the touches that reach the real memory store underneath, and
// fails them when failTouch is set. It is a store module so that it is in place before
// the room starts.
type countingStore struct {
	queue.Store
	touches   atomic.Int64
	failTouch atomic.Bool
}

type countingStoreModule struct{}

func (countingStoreModule) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.waiting_room.stores.counting_test",
		New: func() caddy.Module { return new(countingStoreModule) },
	}
}

func (countingStoreModule) OpenStore(caddy.Context, string) (queue.Store, func(), error) {
	return &countingStore{Store: queue.NewMemoryStore()}, func() {}, nil
}

func init() { caddy.RegisterModule(countingStoreModule{}) }

func (c *countingStore) Touch(ctx context.Context, id queue.VisitorID, now time.Time) (bool, error) {
	c.touches.Add(1)
	if c.failTouch.Load() {
		return false, errors.New("store unavailable")
	}
	return c.Store.Touch(ctx, id, now)
}

// Thousands of concurrent new visitors through the handler: exactly capacity get in.
func TestConcurrentVisitorsNeverExceedCapacity(t *testing.T) {
	const capacity, visitors = 50, 4000
	tr := newTestRoom(t, capacity)
	var wg sync.WaitGroup
	for i := 0; i < visitors; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr.visit("", "application/json")
		}()
	}
	wg.Wait()
	if got := tr.passed.Load(); got != capacity {
		t.Fatalf("%d visitors got in with capacity %d", got, capacity)
	}
	st, _ := tr.h.store.Stats(context.Background())
	if st.Active != capacity || st.Waiting != visitors-capacity {
		t.Fatalf("store says %d active, %d waiting; want %d, %d", st.Active, st.Waiting, capacity, visitors-capacity)
	}
}

// `lang` fixes the page's language whatever the browser asks for; unknown tags are
// refused at adapt.
func TestLangOverride(t *testing.T) {
	tr := newTestRoom(t, 1)
	tr.visit("", "")
	w, _ := tr.visit("", "text/html")
	if !strings.Contains(w.Body.String(), `<html lang="en"`) {
		t.Fatal("default page is not English")
	}
	tr.h.Lang = "ja"
	r := httptest.NewRequest(http.MethodGet, "http://shop.example/", nil)
	r.Header.Set("Accept", "text/html")
	r.Header.Set("Accept-Language", "ko-KR,ko;q=0.9")
	rec := httptest.NewRecorder()
	if err := tr.h.ServeHTTP(rec, r, caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rec.Body.String(), `<html lang="ja"`) {
		t.Fatal("lang ja did not win over Accept-Language ko")
	}
	for _, tt := range []struct {
		in, err string
	}{
		{"waiting_room {\n name a\n capacity 1\n lang de\n}", ""},
		{"waiting_room {\n name a\n capacity 1\n lang de-AT\n}", "lang must be one of"},
		{"waiting_room {\n name a\n capacity 1\n lang\n}", "wrong argument count"},
	} {
		var h Handler
		err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tt.in))
		if tt.err == "" && (err != nil || h.Lang != "de") {
			t.Errorf("%q: %v, lang %q", tt.in, err, h.Lang)
		}
		if tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "Testfile:4")) {
			t.Errorf("%q: error %v, want one mentioning %q at line 4", tt.in, err, tt.err)
		}
	}
}

// Whatever the upstream says in the command header, the header never reaches the
// client; only "revoke" (any case, any surrounding space) ends the session.
func TestCommandHeaderIsAlwaysStripped(t *testing.T) {
	for _, tt := range []struct {
		value   string
		revokes bool
	}{
		{"revoke", true},
		{" Revoke ", true},
		{"", false},
		{"keep", false},
	} {
		tr := newTestRoom(t, 1)
		_, buyer := tr.visit("", "")
		tr.visit("", "") // a waiter, so a revoked buyer coming back is queued behind it
		tr.respond = func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("waiting-room-command", tt.value) // Set canonicalizes the name
			_, _ = w.Write([]byte("thanks"))
		}
		w, _ := tr.visit(buyer, "")
		tr.respond = nil
		if _, leaked := w.Header()["Waiting-Room-Command"]; leaked {
			t.Errorf("%q: the command header reached the client", tt.value)
		}
		before := tr.passed.Load()
		tr.visit(buyer, "application/json")
		if revoked := tr.passed.Load() == before; revoked != tt.revokes {
			t.Errorf("%q: session ended = %v, want %v", tt.value, revoked, tt.revokes)
		}
	}
}

// A revoke from a handler that writes nothing (say, it returns an error) still ends
// the session, and the header still never reaches the client.
func TestRevokeWithoutABody(t *testing.T) {
	tr := newTestRoom(t, 1)
	_, buyer := tr.visit("", "")
	_, waiter := tr.visit("", "")
	tr.respond = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Waiting-Room-Command", "revoke")
	}
	w, _ := tr.visit(buyer, "")
	tr.respond = nil
	if w.Header().Get("Waiting-Room-Command") != "" {
		t.Fatal("the revoke command reached the client")
	}
	tr.step()
	if w, _ := tr.visit(waiter, ""); w.Body.String() != "upstream" {
		t.Fatalf("the waiter was not admitted after a body-less revoke: %q", w.Body.String())
	}
}
