package waitingroom

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
)

// The draw page and receipts against `draw_page off`, for each kind of request: what
// the draw page's check before everything, the draw's link and the receipts cost it,
// in process. The machine is shared and noisy, so the two rooms take turns, a few
// thousand requests each, for many rounds, and the figure is the median of the rounds'
// own ratios (the requests per second with the draw page ÷ those without), as the
// load harness does over HTTP.
//
//	go test -run '^$' -bench 'ChainReceipts' -benchtime 1x ./waitingroom/
func BenchmarkChainReceipts(b *testing.B) {
	const rounds, perRound = 25, 4000
	for _, f := range receiptFigures {
		b.Run(f.name, func(b *testing.B) {
			var serve [2]func()
			for i, side := range []string{"On", "Off"} {
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
				r := httptest.NewRequest(http.MethodGet, "http://shop.example/tickets", nil)
				r.Header = f.header.Clone()
				if cookie != "" {
					r.Header.Set("Cookie", "session=abc; theme=dark; "+cookie)
				}
				w := &discard{h: make(http.Header)}
				serve[i] = func() {
					clear(w.h)
					_ = tr.h.ServeHTTP(w, r, next)
				}
			}
			for b.Loop() {
				var ratios []float64
				for round := range rounds {
					var took [2]time.Duration
					for k := range 2 {
						i := (round + k) % 2 // each side first every other round
						start := time.Now()
						for range perRound {
							serve[i]()
						}
						took[i] = time.Since(start)
					}
					ratios = append(ratios, float64(took[1])/float64(took[0]))
				}
				slices.Sort(ratios)
				b.ReportMetric(ratios[len(ratios)/2], "on/off")
				b.ReportMetric(ratios[len(ratios)/4], "on/off_q1")
				b.ReportMetric(ratios[3*len(ratios)/4], "on/off_q3")
			}
		})
	}
}

// receiptFigures are the requests BenchmarkChainReceipts measures.
var receiptFigures = []struct {
	name     string
	capacity int
	setup    func(tr *testRoom) string // the cookie each request sends, "" for none
	header   http.Header
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
		tr.clock.Advance(2 * time.Second) // a later request than the one that made the place: it carries the receipt
		return tr.h.Cookie.Name + "=" + c
	}, http.Header{"Accept": {"application/json"}}},
}

// benchClock is the system's clock from the test clock's time on: the touch throttle
// sees time pass as in production, and the cookies the setup gave stay valid.
type benchClock struct{ start *fakeClock }

func (c benchClock) Now() time.Time { return c.start.Now().Add(time.Since(benchStart)) }

var benchStart = time.Now()
