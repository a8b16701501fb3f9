package waitingroom

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/push"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

const accountHeader = "X-Account"

// visitAs makes one JSON request for account (no header when ""), with cookie, through
// Caddy's replacer as Caddy's server sets it up, and returns the response, the room
// cookie and {http.waiting_room.keyed}.
func (tr *testRoom) visitAs(account, cookie string) (*httptest.ResponseRecorder, string, string) {
	tr.t.Helper()
	return tr.visitAsAt("http://shop.example/tickets", account, cookie)
}

// visitAsAt is visitAs at target.
func (tr *testRoom) visitAsAt(target, account, cookie string) (*httptest.ResponseRecorder, string, string) {
	tr.t.Helper()
	r := httptest.NewRequest(http.MethodGet, target, nil)
	r.Header.Set("Accept", "application/json")
	if account != "" {
		r.Header.Set(accountHeader, account)
	}
	if cookie != "" {
		r.Header.Set("Cookie", tr.h.Cookie.Name+"="+cookie)
	}
	repl := caddyhttp.NewTestReplacer(r)
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
	w := httptest.NewRecorder()
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		_, err := w.Write([]byte("upstream"))
		return err
	})
	if err := tr.h.ServeHTTP(w, r, next); err != nil {
		tr.t.Fatal(err)
	}
	keyed, _ := repl.GetString("http.waiting_room.keyed")
	for _, c := range w.Result().Cookies() {
		if c.Name == tr.h.Cookie.Name {
			cookie = c.Value
		}
	}
	return w, cookie, keyed
}

func newKeyedTestRoom(t *testing.T, capacity int) *testRoom {
	return newTestRoomWith(t, capacity, func(h *Handler) { h.Key = "{http.request.header." + accountHeader + "}" })
}

// The key comes from the request through Caddy's replacer: two devices of one account
// see one place; a request without the header is the cookie's visitor.
func TestKeyFromPlaceholder(t *testing.T) {
	tr := newKeyedTestRoom(t, 1)
	if _, _, keyed := tr.visitAs("", ""); keyed != "false" {
		t.Fatalf("{http.waiting_room.keyed} without the header = %q, want false", keyed)
	}
	var views []page.View
	var cookies []string
	for _, account := range []string{"alice@example.com", "alice@example.com", "bob@example.com"} {
		w, cookie, keyed := tr.visitAs(account, "")
		if keyed != "true" {
			t.Fatalf("{http.waiting_room.keyed} with the header = %q, want true", keyed)
		}
		if strings.Contains(w.Body.String(), account) || strings.Contains(cookie, account) || strings.Contains(w.Header().Get("Set-Cookie"), account) {
			t.Fatalf("the answer carries the key: %q", w.Body.String())
		}
		var v page.View
		if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || v.Status != "queued" {
			t.Fatalf("%s: %d %s, want queued", account, w.Code, w.Body.String())
		}
		views, cookies = append(views, v), append(cookies, cookie)
	}
	if views[0].Position != 1 || views[1].Position != 1 || views[2].Position != 2 {
		t.Fatalf("positions %d, %d, %d; want alice's two devices at 1, bob at 2", views[0].Position, views[1].Position, views[2].Position)
	}
	// Bob's request with alice's cookie is bob's.
	w, _, _ := tr.visitAs("bob@example.com", cookies[0])
	if v := decodeView(t, w); v.Position != 2 {
		t.Fatalf("bob with alice's cookie at %d, want his own place, 2", v.Position)
	}
}

func decodeView(t *testing.T, w *httptest.ResponseRecorder) page.View {
	t.Helper()
	var v page.View
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		t.Fatalf("%d %q: %v", w.Code, w.Body.String(), err)
	}
	return v
}

// A key longer than the room takes gets a 400 that says so, JSON or text, and no
// cookie; nothing is stored for it.
func TestKeyTooLongAnswer(t *testing.T) {
	tr := newKeyedTestRoom(t, 1)
	long := strings.Repeat("k", token.MaxKey+1)
	w, _, _ := tr.visitAs(long, "")
	var body struct {
		Room        string `json:"room"`
		Error       string `json:"error"`
		MaxKeyBytes int    `json:"max_key_bytes"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || w.Code != http.StatusBadRequest ||
		body.Error != "key_too_long" || body.MaxKeyBytes != token.MaxKey || body.Room != tr.h.Name {
		t.Fatalf("JSON: %d %q, want 400 key_too_long", w.Code, w.Body.String())
	}
	if w.Header().Get("Set-Cookie") != "" || strings.Contains(w.Body.String(), long) {
		t.Fatalf("the refusal set a cookie or echoed the key: %v", w.Header())
	}

	r := httptest.NewRequest(http.MethodGet, "http://shop.example/", nil)
	r.Header.Set(accountHeader, long)
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, caddyhttp.NewTestReplacer(r)))
	text := httptest.NewRecorder()
	if err := tr.h.ServeHTTP(text, r, caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })); err != nil {
		t.Fatal(err)
	}
	if text.Code != http.StatusBadRequest || !strings.Contains(text.Body.String(), "longer than 512 bytes") {
		t.Fatalf("text: %d %q, want 400 saying the key is longer than 512 bytes", text.Code, text.Body.String())
	}
	if w, _, _ := tr.visitAs("alice", ""); w.Code != http.StatusOK || w.Body.String() != "upstream" {
		t.Fatalf("the one slot after two refused keys: %d %q, want alice let in", w.Code, w.Body.String())
	}
}

func TestKeyCaddyfile(t *testing.T) {
	var h Handler
	if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser("waiting_room {\n name a\n capacity 1\n key {http.request.header.X-Account}\n}")); err != nil {
		t.Fatal(err)
	}
	if h.Key != "{http.request.header.X-Account}" {
		t.Fatalf("key = %q", h.Key)
	}
	for _, tc := range []struct{ input, wantErr string }{
		{"waiting_room {\n name a\n capacity 1\n key alice\n}", "no placeholder"},
		{"waiting_room {\n name a\n capacity 1\n key {}\n}", "no placeholder"},
		{"waiting_room {\n name a\n capacity 1\n key \\{x}\n}", "no placeholder"},
		{"waiting_room {\n name a\n capacity 1\n key\n}", "wrong argument count"},
		{"waiting_room {\n name a\n capacity 1\n key {a} {b}\n}", "wrong argument count"},
		{"waiting_room {\n name a\n capacity 1\n key {a}\n key {b}\n}", "duplicate"},
	} {
		var h Handler
		err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), ":4") && !strings.Contains(err.Error(), ":5") {
			t.Errorf("%q: %v, want an error on its line saying %q", tc.input, err, tc.wantErr)
		}
	}
	for key, ok := range map[string]bool{"{http.auth.user.id}": true, "acct-{http.request.header.X-Account}": true, "alice": false, "": true} {
		h := Handler{Name: "a", Capacity: 1, Key: key}
		if err := h.Validate(); (err == nil) != ok {
			t.Errorf("JSON key %q: Validate = %v", key, err)
		}
	}
}

// keyedServer serves tr's room over real HTTP, each request given Caddy's replacer as
// Caddy's server gives it, so a real WebSocket client meets the room as it would.
func keyedServer(t *testing.T, tr *testRoom) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, caddyhttp.NewTestReplacer(r)))
		next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
			_, err := w.Write([]byte("upstream"))
			return err
		})
		if err := tr.h.ServeHTTP(w, r, next); err != nil {
			t.Error(err)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Hostile long keys: the waiting page's WebSocket and a JSON client, each with a key
// over the bound, with the cookie of the visitor who holds the one slot and without,
// get a 400 and nothing else: no upgrade, no cookie, the key not echoed, the room
// unchanged, the slot's holder not let go or let through on it.
func TestKeyTooLongRefusedOnSocketAndJSON(t *testing.T) {
	tr := newKeyedTestRoom(t, 1)
	srv := keyedServer(t, tr)
	w, holder, _ := tr.visitAs("holder", "")
	if w.Body.String() != "upstream" {
		t.Fatalf("the holder was not let in: %d %q", w.Code, w.Body.String())
	}
	tr.visitAs("waiter", "")
	before := tr.counts()
	for _, size := range []int{token.MaxKey + 1, 64 << 10} {
		long := strings.Repeat("k", size)
		for _, cookie := range []string{"", holder} {
			hdr := http.Header{accountHeader: {long}}
			if cookie != "" {
				hdr.Set("Cookie", tr.h.Cookie.Name+"="+cookie)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/tickets", &websocket.DialOptions{
				Subprotocols: []string{push.Subprotocol}, HTTPHeader: hdr,
			})
			cancel()
			if err == nil {
				c.CloseNow()
				t.Fatalf("socket, key of %d bytes, cookie %v: upgraded", size, cookie != "")
			}
			if resp == nil || resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Set-Cookie") != "" || resp.Header.Get("Sec-WebSocket-Accept") != "" {
				t.Fatalf("socket, key of %d bytes, cookie %v: %v, want a plain 400", size, cookie != "", resp)
			}

			r, _ := http.NewRequest(http.MethodGet, srv.URL+"/tickets", nil)
			r.Header = hdr.Clone()
			r.Header.Set("Accept", "application/json")
			resp, err = srv.Client().Do(r)
			if err != nil {
				t.Fatal(err)
			}
			var body struct {
				Error       string `json:"error"`
				MaxKeyBytes int    `json:"max_key_bytes"`
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err := json.Unmarshal(raw, &body); err != nil || resp.StatusCode != http.StatusBadRequest || body.Error != "key_too_long" ||
				body.MaxKeyBytes != token.MaxKey || resp.Header.Get("Set-Cookie") != "" || strings.Contains(string(raw), long[:64]) {
				t.Fatalf("JSON, key of %d bytes, cookie %v: %d %q, want 400 key_too_long", size, cookie != "", resp.StatusCode, raw)
			}
		}
	}
	if after := tr.counts(); after != before {
		t.Fatalf("refused keys changed the room: %+v, was %+v", after, before)
	}
	if w, _, _ := tr.visitAs("holder", holder); w.Body.String() != "upstream" {
		t.Fatalf("the holder after the refusals: %d %q, want still in", w.Code, w.Body.String())
	}
}

// A key is bytes, and the visitor is the documented MAC of exactly those bytes as the
// placeholder gives them: NUL, a line break, invalid UTF-8 are neither cleaned up nor
// cut, so a key is never taken for a near one.
func TestOddKeyReachesTheMACUnchanged(t *testing.T) {
	const secret = "a secret of at least thirty-two bytes, for the test"
	tr := newTestRoomWith(t, 100, func(h *Handler) {
		h.Key = "{http.request.header." + accountHeader + "}"
		h.Secret = secret
	})
	visitorOf := func(key string) string {
		t.Helper()
		r := httptest.NewRequest(http.MethodGet, "http://shop.example/tickets", nil)
		r.Header[accountHeader] = []string{key} // as an auth plugin may hand it on: no header rules apply
		repl := caddyhttp.NewTestReplacer(r)
		r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
		w := httptest.NewRecorder()
		if err := tr.h.ServeHTTP(w, r, caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })); err != nil {
			t.Fatal(err)
		}
		id, _ := repl.GetString("http.waiting_room.visitor")
		return id
	}
	seen := map[string]string{}
	for _, key := range []string{"alice", "alice\x00", "\x00alice", "alice\n", "alice\r\nX-Evil: 1", "al\x00ice", "alice\xff", "alice\xc3", "ALICE", "alice ", "\xff\xfe"} {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte("waiting-room key\x00" + tr.h.Name + "\x00" + key))
		want := hex.EncodeToString(m.Sum(nil)[:16])
		got := visitorOf(key)
		if got != want {
			t.Errorf("key %q is visitor %s, want the MAC of its bytes %s", key, got, want)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("keys %q and %q are one visitor", other, key)
		}
		seen[got] = key
	}
}
