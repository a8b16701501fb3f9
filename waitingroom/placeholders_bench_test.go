package waitingroom

import (
	"context"
	"net/http"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// What the placeholders cost an admitted request: each request gets a fresh replacer,
// as Caddy's server gives it, in both benchmarks; the difference between them is the
// room, placeholders included (compare with BenchmarkChainAdmitted, which has none).

func BenchmarkChainBareReplacer(b *testing.B) {
	next := okHandler()
	benchRequests(b, withReplacer(func(w http.ResponseWriter, r *http.Request) { _ = next.ServeHTTP(w, r) }), "")
}

func BenchmarkChainAdmittedReplacer(b *testing.B) {
	tr := newBenchRoom(b, 1)
	_, cookie := tr.visit("", "")
	next := okHandler()
	benchRequests(b, withReplacer(func(w http.ResponseWriter, r *http.Request) { _ = tr.h.ServeHTTP(w, r, next) }),
		tr.h.Cookie.Name+"="+cookie)
}

// withReplacer gives each request a replacer as Caddy's HTTP server does: the global
// one, with the server's own provider of the http.* placeholders mapped in, which
// leaves room in its list for a handler's.
func withReplacer(serve func(http.ResponseWriter, *http.Request)) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		repl := caddy.NewReplacer()
		repl.Map(func(string) (any, bool) { return nil, false })
		serve(w, r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl)))
	}
}
