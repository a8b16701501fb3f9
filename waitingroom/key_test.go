package waitingroom

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

const accountHeader = "X-Account"

// visitAs makes one JSON request for account (no header when ""), with cookie, through
// Caddy's replacer as Caddy's server sets it up, and returns the response, the room
// cookie and {http.waiting_room.keyed}.
func (tr *testRoom) visitAs(account, cookie string) (*httptest.ResponseRecorder, string, string) {
	tr.t.Helper()
	r := httptest.NewRequest(http.MethodGet, "http://shop.example/tickets", nil)
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
