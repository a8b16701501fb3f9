package waitingroom

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// New visitors with and without a key, each request a new person admitted at once,
// each through Caddy's replacer as Caddy's server sets it up: the key's cost is its
// placeholder's resolution and one HMAC, the join the same one store call.

func BenchmarkChainNewVisitorUnkeyed(b *testing.B) { benchNewVisitors(b, "") }

func BenchmarkChainNewVisitorKeyed(b *testing.B) {
	benchNewVisitors(b, "{http.request.header."+accountHeader+"}")
}

func benchNewVisitors(b *testing.B, key string) {
	tr := newBenchRoom(b, 1<<30)
	tr.h.Key = key
	next := okHandler()
	var seq atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		w := &discard{h: make(http.Header)}
		for pb.Next() {
			r := httptest.NewRequest(http.MethodGet, "http://shop.example/tickets", nil)
			r.Header.Set("Accept", "text/html")
			r.Header.Set(accountHeader, "account-"+strconv.FormatInt(seq.Add(1), 10))
			r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, caddyhttp.NewTestReplacer(r)))
			clear(w.h)
			_ = tr.h.ServeHTTP(w, r, next)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "visitors/s")
}
