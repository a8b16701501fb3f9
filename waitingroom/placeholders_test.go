package waitingroom

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testalloc"
)

// visitWithReplacer is visit with a Caddy replacer on the request, as Caddy's server
// gives every request; it returns the placeholders as the routes behind the room read
// them (from inside the next handler, for an admitted visitor) or after the answer.
func (tr *testRoom) visitWithReplacer(cookie string) (map[string]string, string) {
	tr.t.Helper()
	r := httptest.NewRequest(http.MethodGet, "http://shop.example/tickets", nil)
	r.Header.Set("Accept", "application/json")
	if cookie != "" {
		r.Header.Set("Cookie", tr.h.Cookie.Name+"="+cookie)
	}
	repl := caddy.NewReplacer()
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
	read := func() map[string]string {
		got := map[string]string{}
		for _, k := range []string{"room", "visitor", "status", "waited_seconds", "position"} {
			v, ok := repl.GetString("http.waiting_room." + k)
			if !ok {
				tr.t.Fatalf("{http.waiting_room.%s} is unknown", k)
			}
			got[k] = v
		}
		return got
	}
	var inside map[string]string
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		inside = read()
		return nil
	})
	w := httptest.NewRecorder()
	if err := serveAsCaddy(tr.h, w, r, next); err != nil {
		tr.t.Fatal(err)
	}
	for _, c := range w.Result().Cookies() {
		if c.Name == tr.h.Cookie.Name {
			cookie = c.Value
		}
	}
	if inside != nil {
		return inside, cookie
	}
	return read(), cookie
}

func TestPlaceholders(t *testing.T) {
	tr := newTestRoom(t, 1)
	first, firstCookie := tr.visitWithReplacer("")
	if first["room"] != tr.h.Name || first["status"] != "admitted" || first["waited_seconds"] != "0" ||
		len(first["visitor"]) != 32 || first["position"] != "" {
		t.Fatalf("admitted at join: %v", first)
	}
	again, _ := tr.visitWithReplacer(firstCookie)
	if again["status"] != "admitted" || again["visitor"] != first["visitor"] || again["waited_seconds"] != "0" {
		t.Fatalf("a later request of the session: %v (first %v)", again, first)
	}

	waiting, cookie := tr.visitWithReplacer("")
	if waiting["status"] != "queued" || waiting["position"] != "1" || len(waiting["visitor"]) != 32 ||
		waiting["visitor"] == first["visitor"] || waiting["waited_seconds"] != "" {
		t.Fatalf("queued: %v", waiting)
	}
	tr.clock.Advance(42 * time.Second)
	tr.queued(cookie) // keeps the place
	if err := tr.h.room.RemoveVisitor(context.Background(), mustID(t, first["visitor"]).String()); err != nil {
		t.Fatal(err)
	}
	tr.step()
	in, inCookie := tr.visitWithReplacer(cookie)
	if in["status"] != "admitted" || in["visitor"] != waiting["visitor"] || in["waited_seconds"] != "42" {
		t.Fatalf("admitted from the line after 42 s: %v", in)
	}
	// Every later request of the session says the same wait: the cookie carries it,
	// through the store's touch (which reissues the cookie) too.
	later, _ := tr.visitWithReplacer(inCookie)
	tr.clock.Advance(queue.TouchEvery + time.Second)
	touched, touchedCookie := tr.visitWithReplacer(inCookie)
	afterTouch, _ := tr.visitWithReplacer(touchedCookie)
	for _, got := range []map[string]string{later, touched, afterTouch} {
		if got["status"] != "admitted" || got["visitor"] != waiting["visitor"] || got["waited_seconds"] != "42" {
			t.Fatalf("a later request of a session that waited 42 s: %v", got)
		}
	}
}

func TestPlaceholdersRejectedAndTooMany(t *testing.T) {
	tr := newTestRoomWith(t, 1, func(h *Handler) {
		h.Mode = "reject"
		h.PerIP = &PerIP{MaxJoins: 2, JoinWindow: caddy.Duration(time.Minute)}
	})
	tr.visitWithReplacer("")
	if got, _ := tr.visitWithReplacer(""); got["status"] != "rejected" || got["visitor"] != "" {
		t.Fatalf("turned away by the reject mode: %v", got)
	}
	if got, _ := tr.visitWithReplacer(""); got["status"] != "rejected" || got["visitor"] != "" {
		t.Fatalf("over the per-IP cap: %v", got)
	}
}

func mustID(t *testing.T, s string) queue.VisitorID {
	t.Helper()
	id, err := queue.ParseVisitorID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// Behind Caddy's replacer, an admitted request allocates two objects of the room's:
// its visit, which carries the revoke watcher, and the visit's provider of the
// placeholders. Without a replacer it allocates the watcher alone.
func TestAdmittedRequestAllocatesTwoObjects(t *testing.T) {
	tr := newTestRoom(t, 1)
	_, cookie := tr.visit("", "")
	next := okHandler()
	r := httptest.NewRequest(http.MethodGet, "http://shop.example/tickets", nil)
	r.Header.Set("Cookie", tr.h.Cookie.Name+"="+cookie)
	w := &discard{h: make(http.Header)}
	measure := func(serve func(http.ResponseWriter, *http.Request)) float64 {
		return testalloc.Allocs(2000, func() {
			clear(w.h)
			serve(w, r)
		})
	}
	room := func(w http.ResponseWriter, r *http.Request) { _ = tr.h.ServeHTTP(w, r, next) }
	bare := measure(withReplacer(func(w http.ResponseWriter, r *http.Request) { _ = next.ServeHTTP(w, r) }))
	behind := measure(withReplacer(room))
	alone := measure(room)
	// Both room figures verify the same token, whose MAC comes from a pool that the
	// race detector empties at random, so the placeholders' share is their difference
	// (less the replacer's own), under it too; the room's whole share only without it.
	if placeholders := behind - bare - alone; placeholders > 1.5 {
		t.Fatalf("the placeholders cost an admitted request %.2f allocations beyond the watcher's (%.2f behind a replacer, %.2f for the replacer, %.2f without one)",
			placeholders, behind, bare, alone)
	}
	if !testalloc.Race && behind > bare+2.5 {
		t.Fatalf("an admitted request allocates %.2f times behind Caddy's replacer, %.2f without the room", behind, bare)
	}
}
