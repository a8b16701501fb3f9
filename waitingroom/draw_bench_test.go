package waitingroom

import (
	"net/http"
	"testing"
	"time"
)

// The draw page and receipts against `draw_page off`, each figure as a pair of
// sub-benchmarks run one after the other: what the draw page's check before
// everything, the draw's link and the receipts cost each kind of request, in
// process, where the machine's noise is smaller than over HTTP.
//
//	go test -run '^$' -bench 'ChainReceipts' -count 6 ./waitingroom/
func BenchmarkChainReceipts(b *testing.B) {
	for _, f := range []struct {
		name     string
		capacity int
		setup    func(tr *testRoom) string // the cookie each request sends, "" for none
		accept   http.Header
	}{
		{"Admitted", 1, func(tr *testRoom) string {
			_, c := tr.visit("", "")
			return tr.h.Cookie.Name + "=" + c
		}, http.Header{"Accept": {"text/html"}}},
		{"NewVisitor", 1 << 30, nil, http.Header{"Accept": {"text/html"}}},
		{"NewVisitorQueuedGzip", 1, func(tr *testRoom) string { tr.visit("", ""); return "" },
			http.Header{"Accept": {"text/html"}, "Accept-Encoding": {"gzip, deflate, br, zstd"}}},
		{"NewVisitorQueuedJSON", 1, func(tr *testRoom) string { tr.visit("", ""); return "" },
			http.Header{"Accept": {"application/json"}}},
		{"WaiterPollJSON", 1, func(tr *testRoom) string {
			tr.visit("", "")
			_, c := tr.visit("", "application/json")
			tr.clock.Advance(2e9) // a later request than the one that made the place: it carries the receipt
			return tr.h.Cookie.Name + "=" + c
		}, http.Header{"Accept": {"application/json"}}},
	} {
		for _, side := range []string{"On", "Off"} {
			b.Run(f.name+"/"+side, func(b *testing.B) {
				tr := newTestRoomWith(b, f.capacity, func(h *Handler) {
					if side == "Off" {
						h.DrawPage = "off"
					}
				})
				cookie := ""
				if f.setup != nil {
					cookie = f.setup(tr)
				}
				tr.h.clock = benchClock{tr.clock}
				next := okHandler()
				benchRequestsWith(b, func(w http.ResponseWriter, r *http.Request) { _ = tr.h.ServeHTTP(w, r, next) }, cookie, f.accept)
			})
		}
	}
}

// benchClock is the system's clock from the test clock's time on: the touch throttle
// sees time pass as in production, and the cookies the setup gave stay valid.
type benchClock struct{ start *fakeClock }

func (c benchClock) Now() time.Time { return c.start.Now().Add(time.Since(benchStart)) }

var benchStart = time.Now()
