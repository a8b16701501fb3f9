package waitingroom

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// Handler benchmarks: what the room adds to a request, against the same chain without
// it, measured in the same run. ns/op of the bare chain is the baseline; the ratio of
// the two is what the README reports.

func BenchmarkChainBare(b *testing.B) {
	next := okHandler()
	benchRequests(b, func(w http.ResponseWriter, r *http.Request) { _ = next.ServeHTTP(w, r) }, "")
}

func BenchmarkChainAdmitted(b *testing.B) {
	tr := newBenchRoom(b, 1)
	_, cookie := tr.visit("", "")
	next := okHandler()
	benchRequests(b, func(w http.ResponseWriter, r *http.Request) { _ = tr.h.ServeHTTP(w, r, next) }, tr.h.Cookie.Name+"="+cookie)
}

func BenchmarkChainNewVisitor(b *testing.B) {
	// Capacity large enough that every new visitor is admitted: join, sign, set cookie.
	tr := newBenchRoom(b, 1<<30)
	next := okHandler()
	benchRequests(b, func(w http.ResponseWriter, r *http.Request) { _ = tr.h.ServeHTTP(w, r, next) }, "")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "visitors/s")
}

func newBenchRoom(b *testing.B, capacity int) *testRoom {
	tr := newTestRoom(b, capacity)
	tr.h.clock = room.SystemClock{} // the touch throttle must see time pass as in production
	return tr
}

func okHandler() caddyhttp.Handler {
	body := []byte("ok")
	return caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		_, err := w.Write(body)
		return err
	})
}

// discard is a ResponseWriter that keeps nothing, so the benchmark measures the
// handler, not a recorder.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

func benchRequests(b *testing.B, serve func(http.ResponseWriter, *http.Request), cookie string) {
	benchRequestsAccepting(b, serve, cookie, "text/html")
}

func benchRequestsAccepting(b *testing.B, serve func(http.ResponseWriter, *http.Request), cookie, accept string) {
	benchRequestsWith(b, serve, cookie, http.Header{"Accept": {accept}})
}

func benchRequestsWith(b *testing.B, serve func(http.ResponseWriter, *http.Request), cookie string, header http.Header) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := httptest.NewRequest(http.MethodGet, "http://shop.example/tickets", nil)
		r.Header = header.Clone()
		if cookie != "" {
			r.Header.Set("Cookie", "session=abc; theme=dark; "+cookie)
		}
		w := &discard{h: make(http.Header)}
		for pb.Next() {
			clear(w.h)
			serve(w, r)
		}
	})
}

func BenchmarkChainNewVisitorQueued(b *testing.B) {
	// Capacity 1 and taken: every new visitor joins the queue and gets the waiting page.
	tr := newBenchRoom(b, 1)
	tr.visit("", "")
	next := okHandler()
	benchRequests(b, func(w http.ResponseWriter, r *http.Request) { _ = tr.h.ServeHTTP(w, r, next) }, "")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "visitors/s")
}

func BenchmarkChainNewVisitorQueuedGzip(b *testing.B) {
	// As ChainNewVisitorQueued, asking as a browser does: the page goes out gzipped.
	tr := newBenchRoom(b, 1)
	tr.visit("", "")
	next := okHandler()
	header := http.Header{"Accept": {"text/html"}, "Accept-Encoding": {"gzip, deflate, br, zstd"}}
	benchRequestsWith(b, func(w http.ResponseWriter, r *http.Request) { _ = tr.h.ServeHTTP(w, r, next) }, "", header)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "visitors/s")
}

func BenchmarkChainNewVisitorQueuedJSON(b *testing.B) {
	// As ChainNewVisitorQueued, for an API client: the same facts as JSON.
	tr := newBenchRoom(b, 1)
	tr.visit("", "")
	next := okHandler()
	benchRequestsAccepting(b, func(w http.ResponseWriter, r *http.Request) { _ = tr.h.ServeHTTP(w, r, next) }, "", "application/json")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "visitors/s")
}
