package waitingroom

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// A key set up so that it silently does not work is warned of once, from the first
// request that proves it: a header the client's own copy of was left beside the
// trusted one, and an authenticated user read before the authentication ran. A key
// set up right, and requests that prove nothing, are not warned of.
func TestKeyMistakesAreWarnedOnce(t *testing.T) {
	for _, tc := range []struct {
		name, key string
		header    http.Header
		warnings  int
	}{
		{"the client's header beside the trusted one", "{http.request.header.X-Account}", http.Header{"X-Account": {"mallory", "alice"}}, 1},
		{"one value of the header", "{http.request.header.X-Account}", http.Header{"X-Account": {"alice"}}, 0},
		{"no header", "{http.request.header.X-Account}", http.Header{}, 0},
		{"the user before the authentication", "{http.auth.user.id}", http.Header{"Authorization": {"Basic YWxpY2U6c2VjcmV0"}}, 1},
		{"no credentials", "{http.auth.user.id}", http.Header{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.WarnLevel)
			tr := newTestRoomWith(t, 1, func(h *Handler) { h.Key, h.logger = tc.key, zap.New(core) })
			for range 3 {
				r := httptest.NewRequest(http.MethodGet, "http://shop.example/tickets", nil)
				r.Header = tc.header.Clone()
				r.Header.Set("Accept", "application/json")
				repl := caddyhttp.NewTestReplacer(r)
				r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
				next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error { return nil })
				if err := tr.h.ServeHTTP(httptest.NewRecorder(), r, next); err != nil {
					t.Fatal(err)
				}
			}
			if n := logs.Len(); n != tc.warnings {
				t.Fatalf("%d warnings over three requests, want %d: %v", n, tc.warnings, logs.All())
			}
		})
	}
}
