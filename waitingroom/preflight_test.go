package waitingroom

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/push"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

func testCounter(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// roomCounts is what a request could have changed in a room: its line, its active
// set and its join counters.
type roomCounts struct {
	queue.Stats
	admitted, queued float64
}

func (tr *testRoom) counts() roomCounts {
	tr.t.Helper()
	st, err := tr.h.store.Stats(context.Background())
	if err != nil {
		tr.t.Fatal(err)
	}
	t := tr.t.(*testing.T)
	return roomCounts{st, testCounter(t, tr.h.metrics.admitted), testCounter(t, tr.h.metrics.queued)}
}

// A CORS preflight (OPTIONS with Access-Control-Request-Method) is the browser asking
// whether it may send a cross-origin request; it never carries cookies. It goes on to
// the next handler, which answers it with the CORS headers, and is no visitor: no
// cookie, no place, no slot, no count; with a free slot as with a full room.
func TestCORSPreflightPassesUncounted(t *testing.T) {
	for _, full := range []bool{false, true} {
		name := "free slot"
		if full {
			name = "full room"
		}
		t.Run(name, func(t *testing.T) {
			tr := newTestRoom(t, 1)
			if full {
				if w, _ := tr.visit("", ""); w.Body.String() != "upstream" {
					t.Fatal("the first visitor was not admitted")
				}
				tr.visit("", "") // and one waits
			}
			before := tr.counts()
			for i := range 20 {
				r := httptest.NewRequest(http.MethodOptions, "http://shop.example/api/cart", nil)
				r.Header.Set("Origin", "https://app.example")
				r.Header.Set("Access-Control-Request-Method", "POST")
				r.Header.Set("Access-Control-Request-Headers", "content-type")
				w := httptest.NewRecorder()
				reached := false
				next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
					reached = true
					w.Header().Set("Access-Control-Allow-Origin", "https://app.example")
					w.WriteHeader(http.StatusNoContent)
					return nil
				})
				if err := tr.h.ServeHTTP(w, r, next); err != nil {
					t.Fatal(err)
				}
				if !reached || w.Code != http.StatusNoContent || w.Header().Get("Access-Control-Allow-Origin") == "" {
					t.Fatalf("preflight %d: reached %v, %d %v", i, reached, w.Code, w.Header())
				}
				if sc := w.Header().Values("Set-Cookie"); len(sc) != 0 {
					t.Fatalf("preflight %d set a cookie: %q", i, sc)
				}
			}
			if after := tr.counts(); after != before {
				t.Fatalf("20 preflights changed the room: %+v, was %+v", after, before)
			}
		})
	}
}

// An OPTIONS request that is not a preflight is an ordinary request: a visitor like
// any other (what the room does with every method: docs/waiting-page.md).
func TestPlainOptionsIsAVisitor(t *testing.T) {
	tr := newTestRoom(t, 1)
	tr.visit("", "")
	r := httptest.NewRequest(http.MethodOptions, "http://shop.example/api/cart", nil)
	r.Header.Set("Accept", "application/json")
	w := httptest.NewRecorder()
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		t.Fatal("a plain OPTIONS passed a full room")
		return nil
	})
	if err := tr.h.ServeHTTP(w, r, next); err != nil {
		t.Fatal(err)
	}
	if len(w.Header().Values("Set-Cookie")) != 1 || tr.counts().Waiting != 1 {
		t.Fatalf("plain OPTIONS: %d %v, counts %+v", w.Code, w.Header(), tr.counts())
	}
}

// foreignSocket is the waiting page's WebSocket upgrade as a page on another site
// opens it: its Origin is not the request's Host.
func foreignSocket(cookieName, cookie string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "http://shop.example/tickets", nil)
	r.Header.Set("Connection", "Upgrade")
	r.Header.Set("Upgrade", "websocket")
	r.Header.Set("Sec-WebSocket-Version", "13")
	r.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	r.Header.Set("Sec-WebSocket-Protocol", push.Subprotocol)
	r.Header.Set("Origin", "https://evil.example")
	if cookie != "" {
		r.Header.Set("Cookie", cookieName+"="+cookie)
	}
	return r
}

// A cross-site WebSocket upgrade is refused before the room stores anything: no place,
// no slot, no cookie on the 403, no count; for a cookie-less visitor (with a free slot
// as with a full room) and for a waiter's cookie (its place is not touched).
func TestForeignSocketIsRefusedBeforeJoining(t *testing.T) {
	for _, full := range []bool{false, true} {
		name := "free slot"
		if full {
			name = "full room"
		}
		t.Run(name, func(t *testing.T) {
			tr := newTestRoom(t, 1)
			var waiter string
			if full {
				tr.visit("", "")
				_, waiter = tr.visit("", "")
			}
			before := tr.counts()
			for i := range 20 {
				cookie := ""
				if full && i%2 == 1 {
					cookie = waiter
				}
				w := httptest.NewRecorder()
				next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
					t.Fatal("a cross-site waiting socket reached the upstream")
					return nil
				})
				if err := tr.h.ServeHTTP(w, foreignSocket(tr.h.Cookie.Name, cookie), next); err != nil {
					t.Fatal(err)
				}
				if w.Code != http.StatusForbidden || len(w.Header().Values("Set-Cookie")) != 0 || w.Header().Get("Sec-WebSocket-Accept") != "" {
					t.Fatalf("upgrade %d (cookie %v): %d %v", i, cookie != "", w.Code, w.Header())
				}
			}
			if after := tr.counts(); after != before {
				t.Fatalf("20 cross-site upgrades changed the room: %+v, was %+v", after, before)
			}
		})
	}
}
