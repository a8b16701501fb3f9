package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-waitingroom/caddy-waitingroom/waitingroom"
)

// inMemory keeps a test's room off Caddy's data directory: the tests reuse room
// names, and a room kept on disk would start the next test where the last one left
// it.
var inMemory = json.RawMessage(`{"type":"memory","file":"off"}`)

// A room's name is one path segment, whatever it holds: a name with a slash is reached
// through %2F, and a name that looks like a route of its own is still the room.
func TestRoomNamesAreOnePathSegment(t *testing.T) {
	for _, name := range []string{"a/b", "admit", "visitors", "x y"} {
		h := &waitingroom.Handler{Name: name, Capacity: 1, StoreRaw: inMemory}
		ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
		if err := h.Provision(ctx); err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest(http.MethodGet, "http://localhost:2019/waiting_room/"+url.PathEscape(name), nil)
		w := httptest.NewRecorder()
		if err := adminRoutes.ServeHTTP(w, r); err != nil {
			t.Fatalf("room %q: %v", name, err)
		}
		var info struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &info); err != nil || info.Name != name {
			t.Fatalf("room %q answered %d %s", name, w.Code, w.Body)
		}
		cancel()
		_ = h.Cleanup()
	}
}

// The dashboard's name is refused for a room, at validate: its path would be the
// dashboard's.
func TestDashboardIsNoRoomName(t *testing.T) {
	h := &waitingroom.Handler{Name: "dashboard", Capacity: 1, StoreRaw: inMemory}
	if err := h.Validate(); err == nil {
		t.Fatal("a room named dashboard was accepted")
	}
}

// A wrong method is a 405 naming the methods of that path: the dashboard's GET alone,
// a room's GET and PATCH, whatever was asked before.
func TestWrongMethodNamesThePathsMethods(t *testing.T) {
	h := &waitingroom.Handler{Name: "methods", Capacity: 1, StoreRaw: inMemory}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	if err := h.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	defer h.Cleanup()
	for _, tc := range []struct{ path, want string }{
		{"/waiting_room/dashboard", "use GET"},
		{"/waiting_room/methods", "use GET or PATCH"},
		{"/waiting_room/dashboard", "use GET"},
	} {
		r := httptest.NewRequest(http.MethodPut, "http://localhost:2019"+tc.path, nil)
		err := adminRoutes.ServeHTTP(httptest.NewRecorder(), r)
		apiErr, ok := err.(caddy.APIError)
		if !ok || apiErr.HTTPStatus != http.StatusMethodNotAllowed || !strings.HasSuffix(apiErr.Err.Error(), tc.want) {
			t.Fatalf("PUT %s: %v, want a 405 ending %q", tc.path, err, tc.want)
		}
	}
}
