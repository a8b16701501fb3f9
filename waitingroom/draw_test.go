package waitingroom_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/draw"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
	"github.com/caddy-waitingroom/caddy-waitingroom/waitingroom"
)

// The public draw page over HTTP (docs/fairness.md): answered before anything else,
// it sets no cookie and counts nobody; a page for another room or a draw the store
// does not hold is 404; the seed is on no answer before the draw, whatever the
// client asks for; a queued answer carries a receipt that checks against the page.

// drawGet asks er's handler for path with accept and the given method, and fails the
// test if it set a cookie or reached the upstream.
func (er *eventRoom) drawGet(method, path, accept string) *httptest.ResponseRecorder {
	er.t.Helper()
	r := httptest.NewRequest(method, "http://shop.example"+path, nil)
	if accept != "" {
		r.Header.Set("Accept", accept)
	}
	w := httptest.NewRecorder()
	next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error {
		er.t.Fatalf("%s %s reached the upstream", method, path)
		return nil
	})
	if err := er.h.ServeHTTP(w, r, next); err != nil {
		er.t.Fatalf("%s %s: %v", method, path, err)
	}
	if c := w.Header().Values("Set-Cookie"); len(c) > 0 {
		er.t.Fatalf("%s %s set a cookie: %v", method, path, c)
	}
	return w
}

// stats are the room's counters, read from its store.
func (er *eventRoom) stats() queue.Stats {
	er.t.Helper()
	st, err := waitingroom.StoreOf(er.h).Stats(context.Background())
	if err != nil {
		er.t.Fatal(err)
	}
	return st
}

var drawStores = map[string]func(t *testing.T) string{
	"memory": func(*testing.T) string { return `{"type":"memory"}` },
	"redis": func(t *testing.T) string {
		return fmt.Sprintf(`{"type":"redis","url":"redis://%s"}`, testredis.Start(t).Addr)
	},
}

// Before the draw no answer of the page holds the seed: not the JSON, not the HTML,
// not a draw's own page, for any Accept; the entries list is not there while entries
// are open. After the draw the seed is there, and it is the committed one.
func TestDrawPageNeverShowsTheSeedEarly(t *testing.T) {
	for name, store := range drawStores {
		t.Run(name, func(t *testing.T) {
			start := time.Date(2031, 11, 28, 9, 0, 0, 0, time.UTC)
			er := newEventRoom(t, store(t), start.Add(-5*time.Minute), func(h *waitingroom.Handler) {
				h.Capacity = 2
				h.Events = []waitingroom.Event{{Start: start, End: start.Add(time.Hour), Prequeue: caddy.Duration(time.Hour), Shuffle: true}}
			})
			for range 5 {
				er.visit("")
			}
			rec, ok, err := waitingroom.StoreOf(er.h).Draw(context.Background(), "")
			if err != nil || !ok || rec.State != queue.DrawOpen {
				t.Fatalf("the pre-queue's draw: %+v, %v, %v", rec, ok, err)
			}
			base := page.DefaultDrawPage(er.h.Name)
			before := er.stats()
			for _, path := range []string{base, base + "/" + rec.ID} {
				for _, accept := range []string{"", "application/json", "text/html", "*/*", "text/html;q=0.5, application/json", "text/plain"} {
					w := er.drawGet(http.MethodGet, path, accept)
					body := w.Body.String()
					if w.Code != http.StatusOK || strings.Contains(body, rec.Seed.String()) || strings.Contains(body, `"seed"`) {
						t.Fatalf("%s (Accept %q) in the pre-queue: %d\n%s", path, accept, w.Code, body)
					}
					if cc := w.Header().Get("Cache-Control"); cc != "public, max-age=5" {
						t.Fatalf("%s: Cache-Control %q", path, cc)
					}
				}
			}
			if w := er.drawGet(http.MethodGet, base+"/"+rec.ID+"/entries", ""); w.Code != http.StatusNotFound {
				t.Fatalf("the entries list while entries are open: %d %s", w.Code, w.Body)
			}
			if after := er.stats(); after != before {
				t.Fatalf("the page's answers changed the room: %+v, then %+v", before, after)
			}

			er.clock.Advance(5 * time.Minute)
			for range 3 {
				waitingroom.Tick(er.h)
			}
			w := er.drawGet(http.MethodGet, base, "application/json")
			p, err := draw.ParsePage(w.Body.Bytes())
			if err != nil || p.State != draw.StateDrawn || p.Seed != rec.Seed.String() {
				t.Fatalf("after the start: %v\n%s", err, w.Body)
			}
			entries := er.drawGet(http.MethodGet, p.EntriesURL, "")
			if entries.Code != http.StatusOK || draw.EntriesHash(entries.Body.Bytes()) != p.EntriesHash || p.Entrants != 5 {
				t.Fatalf("the entries list: %d, %d entrants, %q", entries.Code, p.Entrants, entries.Body)
			}
			if cc := entries.Header().Get("Cache-Control"); !strings.Contains(cc, "immutable") {
				t.Fatalf("the entries list's Cache-Control %q", cc)
			}
		})
	}
}

// A page of a room that does not exist (at the default place, another name), of a
// draw the store does not hold, or of no draw at all is 404; a method other than GET
// and HEAD is 405; none sets a cookie or counts anyone, in any mode.
func TestDrawPageOfAnUnknownRoom(t *testing.T) {
	er := newEventRoom(t, `{"type":"memory"}`, time.Date(2031, 11, 28, 9, 0, 0, 0, time.UTC), func(h *waitingroom.Handler) {
		h.Capacity = 1
	})
	er.visit("")
	er.visit("")
	base := page.DefaultDrawPage(er.h.Name)
	before := er.stats()
	for _, path := range []string{
		"/.well-known/waiting-room/no-such-room", "/.well-known/waiting-room/no-such-room/fifo",
		"/.well-known/waiting-room/" + er.h.Name + "x", base + "/event-2031-01-01T00:00:00Z",
		base + "/event-2031-01-01T00:00:00Z/entries", base + "/fifo/entries", base + "/", base + "/fifo/",
		base + "/" + strings.Repeat("x", 100), base + "/bad%20id", base + "/fifo/entries/more",
	} {
		if w := er.drawGet(http.MethodGet, path, "application/json"); w.Code != http.StatusNotFound {
			t.Errorf("%s: %d %s, want 404", path, w.Code, w.Body)
		}
	}
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		if w := er.drawGet(method, base, ""); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s %s: %d, want 405", method, base, w.Code)
		}
	}
	if w := er.drawGet(http.MethodHead, base, "application/json"); w.Code != http.StatusOK || w.Body.Len() != 0 {
		t.Errorf("HEAD: %d with %d bytes", w.Code, w.Body.Len())
	}
	if after := er.stats(); after != before {
		t.Fatalf("the page's answers changed the room: %+v, then %+v", before, after)
	}
}

// A room whose name is not a path segment as it is has its page at the name escaped,
// and a link to it (the answer's draw_url) leads there.
func TestDrawPageOfARoomWithAnyName(t *testing.T) {
	er := newEventRoom(t, `{"type":"memory"}`, time.Date(2031, 11, 28, 9, 0, 0, 0, time.UTC), func(h *waitingroom.Handler) {
		h.Name, h.Capacity = "tickets & more/ü "+h.Name, 1
	})
	er.visit("")
	body, _ := er.visitRaw("")
	var a struct {
		DrawURL string `json:"draw_url"`
	}
	if err := json.Unmarshal([]byte(body), &a); err != nil || a.DrawURL != page.DefaultDrawPage(er.h.Name) ||
		!strings.HasPrefix(a.DrawURL, "/.well-known/waiting-room/tickets%20&%20more%2F%C3%BC%20") {
		t.Fatalf("draw_url %q (%v)", a.DrawURL, err)
	}
	w := er.drawGet(http.MethodGet, a.DrawURL, "application/json")
	p, err := draw.ParsePage(w.Body.Bytes())
	if w.Code != http.StatusOK || err != nil || p.Room != er.h.Name || p.Draw != draw.FIFO {
		t.Fatalf("the page at %s: %d %v %s", a.DrawURL, w.Code, err, w.Body)
	}
}

// A queued waiter's JSON: the answer that made the place names the draw page and
// carries no receipt; every later one carries the receipt, which checks against the
// page: in a FIFO room as the signed ticket, in a pre-queue as an entry of the open
// draw, and after the draw with the place the rule gives.
func TestQueuedAnswerCarriesAReceipt(t *testing.T) {
	for name, store := range drawStores {
		t.Run(name, func(t *testing.T) {
			start := time.Date(2031, 11, 28, 9, 0, 0, 0, time.UTC)
			er := newEventRoom(t, store(t), start.Add(-2*time.Hour), func(h *waitingroom.Handler) {
				h.Capacity = 1
				h.Events = []waitingroom.Event{{Start: start, End: start.Add(time.Hour), Prequeue: caddy.Duration(time.Hour), Shuffle: true}}
			})
			er.visit("") // the one admitted
			receipt := func(cookie string) (json.RawMessage, string) {
				t.Helper()
				er.clock.Advance(time.Second) // a later request than the one that made the place
				r := httptest.NewRequest(http.MethodGet, "http://shop.example/", nil)
				r.Header.Set("Accept", "application/json")
				r.Header.Set("Cookie", er.h.Cookie.Name+"="+cookie)
				w := httptest.NewRecorder()
				if err := er.h.ServeHTTP(w, r, caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })); err != nil {
					t.Fatal(err)
				}
				var a struct {
					Receipt json.RawMessage `json:"receipt"`
					DrawURL string          `json:"draw_url"`
				}
				if w.Body.Len() == 0 {
					return nil, "" // let in
				}
				if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil {
					t.Fatalf("%v: %s", err, w.Body)
				}
				return a.Receipt, a.DrawURL
			}
			check := func(what string, b json.RawMessage, url string) draw.Result {
				t.Helper()
				pg := er.drawGet(http.MethodGet, url, "application/json").Body.Bytes()
				var list *bytes.Reader
				if p, err := draw.ParsePage(pg); err == nil && p.EntriesURL != "" {
					list = bytes.NewReader(er.drawGet(http.MethodGet, p.EntriesURL, "").Body.Bytes())
				}
				var res draw.Result
				var err error
				if list != nil {
					res, err = draw.Verify(b, pg, list)
				} else {
					res, err = draw.Verify(b, pg, nil)
				}
				if err != nil {
					t.Fatalf("%s: the receipt %s does not check against %s: %v", what, b, pg, err)
				}
				return res
			}
			// FIFO, before the pre-queue.
			w, fifoCookie := er.visitRaw("")
			if !strings.Contains(w, `"draw_url":"`+page.DefaultDrawPage(er.h.Name)+`"`) || strings.Contains(w, `"receipt"`) {
				t.Fatalf("the answer that made the place: %s", w)
			}
			b, url := receipt(fifoCookie)
			if res := check("FIFO", b, url); res.Receipt.Draw != draw.FIFO || res.Receipt.Ticket == 0 {
				t.Fatalf("a FIFO room's receipt: %+v", res.Receipt)
			}
			// The pre-queue: an entry of the open draw.
			er.clock.Advance(90 * time.Minute)
			waitingroom.Tick(er.h)
			cookies := make([]string, 4)
			for i := range cookies {
				_, cookies[i] = er.visit("")
			}
			b, url = receipt(cookies[0])
			if res := check("pre-queue", b, url); res.Page.State != draw.StateOpen || res.Receipt.Place != 0 {
				t.Fatalf("in the pre-queue: %+v", res)
			}
			// After the draw: the place, as the rule gives it, of each still in line.
			er.clock.Advance(31 * time.Minute)
			for range 3 {
				waitingroom.Tick(er.h)
			}
			checked := 0
			for _, c := range cookies {
				if b, url = receipt(c); b == nil {
					continue
				}
				if res := check("drawn", b, url); res.Page.State != draw.StateDrawn || res.Receipt.Place == 0 || res.Place != res.Receipt.Place {
					t.Fatalf("after the draw: %+v", res)
				}
				checked++
			}
			if checked < 3 {
				t.Fatalf("%d receipts with a place after the draw, want 3", checked)
			}
		})
	}
}

// visitRaw is visit's body as sent.
func (er *eventRoom) visitRaw(cookie string) (string, string) {
	er.t.Helper()
	r := httptest.NewRequest(http.MethodGet, "http://shop.example/", nil)
	r.Header.Set("Accept", "application/json")
	if cookie != "" {
		r.Header.Set("Cookie", er.h.Cookie.Name+"="+cookie)
	}
	w := httptest.NewRecorder()
	if err := er.h.ServeHTTP(w, r, caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })); err != nil {
		er.t.Fatal(err)
	}
	for _, c := range w.Result().Cookies() {
		if c.Name == er.h.Cookie.Name {
			cookie = c.Value
		}
	}
	return w.Body.String(), cookie
}
