package waitingroom

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testalloc"
)

// jsonView is what a JSON visit answered, and the cookie it left.
func (tr *testRoom) jsonView(cookie string) (page.View, string, bool) {
	tr.t.Helper()
	w, c := tr.visit(cookie, "application/json")
	if w.Body.String() == "upstream" {
		return page.View{}, c, true
	}
	var v page.View
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		tr.t.Fatalf("answer %d %q is neither the upstream nor JSON", w.Code, w.Body.String())
	}
	return v, c, false
}

// A busy admitted visitor is let through until session_max after admission, then is
// a new visitor at the back of the line, told why; the head of the line gets the slot.
func TestSessionMaxRequeuesAtTheBack(t *testing.T) {
	tr := newTestRoomWith(t, 1, func(h *Handler) { h.SessionMax = caddy.Duration(2 * time.Minute) })
	_, shopper, _ := tr.jsonView("")
	v, waiter, in := tr.jsonView("")
	if in || v.Position != 1 {
		t.Fatalf("second visitor into a room of one: admitted %v, position %d", in, v.Position)
	}
	for range 5 { // busy for 1m40s: requests every 20 s, the waiter polling
		tr.clock.Advance(20 * time.Second)
		if _, c, in := tr.jsonView(shopper); !in {
			t.Fatalf("admitted visitor stopped %v after admission, before session_max", tr.clock.Now().Sub(time.Unix(1_800_000_000, 0)))
		} else if c != "" {
			shopper = c
		}
		tr.queued(waiter)
		tr.step()
	}
	tr.clock.Advance(20*time.Second + time.Second) // 2m1s after admission
	v, requeued, in := tr.jsonView(shopper)
	if in {
		t.Fatal("a visitor past session_max got through")
	}
	// Behind the waiter: at 2, or at 1 when the room's loop, kicked by the freed slot,
	// has admitted the waiter before this visitor's join (the next checks hold the
	// waiter to that slot either way).
	if v.Reason != room.ReasonSessionMax || v.Position < 1 || v.Position > 2 {
		t.Fatalf("past session_max: reason %q position %d, want %q at position 2 (behind the waiter) or 1", v.Reason, v.Position, room.ReasonSessionMax)
	}
	if tr.tokenOf(requeued).ID == tr.tokenOf(shopper).ID {
		t.Fatal("the requeued visitor kept the old visitor id")
	}
	tr.step()
	if _, _, in := tr.jsonView(waiter); !in {
		t.Fatal("the head of the line was not admitted into the slot session_max freed")
	}
	if v := tr.queued(requeued); v.Position != 1 || v.Reason != "" {
		t.Fatalf("requeued visitor later: position %d reason %q, want 1 and no reason (said once)", v.Position, v.Reason)
	}
}

// Past session_max with nobody waiting and a slot free, the visitor is admitted again
// at once, as a new visitor whose own session_max counts from now. The page says why
// only to those it queues.
func TestSessionMaxAdmitsAtOnceWhenFree(t *testing.T) {
	tr := newTestRoomWith(t, 2, func(h *Handler) { h.SessionMax = caddy.Duration(50 * time.Second) })
	_, first, _ := tr.jsonView("")
	old := tr.tokenOf(first).ID
	tr.clock.Advance(50 * time.Second)
	_, again, in := tr.jsonView(first)
	if !in {
		t.Fatal("past session_max with a free slot and nobody waiting: not admitted at once")
	}
	if tr.tokenOf(again).ID == old || !tr.tokenOf(again).Since.Equal(tr.clock.Now()) {
		t.Fatal("readmitted visitor did not get a new id admitted now")
	}
	if got := tr.stats().Active; got != 1 {
		t.Fatalf("active %d after the readmission, want 1 (the old session ended)", got)
	}
}

// The slot frees at session_max with no request from the visitor, and the page (not
// only JSON) says why to a visitor it queues again.
func TestSessionMaxFreesTheSlotWithoutARequest(t *testing.T) {
	tr := newTestRoomWith(t, 1, func(h *Handler) {
		h.SessionMax = caddy.Duration(2 * time.Minute)
		h.SessionTTL = caddy.Duration(10 * time.Minute)
	})
	_, shopper, _ := tr.jsonView("")
	_, waiter, _ := tr.jsonView("")
	tr.clock.Advance(time.Minute)
	tr.queued(waiter)
	tr.step()
	tr.clock.Advance(time.Minute + time.Second)
	tr.queued(waiter)
	tr.step()
	if _, _, in := tr.jsonView(waiter); !in {
		t.Fatal("the waiter was not admitted when the silent visitor's session_max came")
	}
	w := tr.askPage(shopper, "")
	if body := w.Body.String(); !strings.Contains(body, "Your time on the site ran out") || !strings.Contains(body, `id="wr-ended"`) {
		t.Fatalf("the page for a visitor past session_max does not say so:\n%s", body)
	}
}

// PATCH sets session_max (and the other timings) at run time, null restores, "off"
// turns a configured one off, and bad values are the caller's error and change nothing.
func TestPatchSessionSettings(t *testing.T) {
	tr := newTestRoom(t, 1)
	_, shopper, _ := tr.jsonView("")
	info := tr.patch(`{"session_max":"90s","session_ttl":"3m","queue_ttl":"15s","away_ttl":"5m"}`)
	if info.SessionMax != "1m30s" || info.SessionTTL != "3m0s" || info.QueueTTL != "15s" || info.AwayTTL != "5m0s" {
		t.Fatalf("room object after PATCH: %+v", info.Timings)
	}
	if info.Configured.SessionMax != 0 || info.Configured.SessionTTL != time.Minute {
		t.Fatalf("configured settings changed by a PATCH: %+v", info.Configured)
	}
	lim := tr.h.room.Settings(tr.clock.Now()).Limits()
	if lim.SessionMax != 90*time.Second || lim.SessionTTL != 3*time.Minute || lim.QueueTTL != 15*time.Second || lim.AwayTTL != 5*time.Minute {
		t.Fatalf("store limits after PATCH: %+v", lim)
	}
	if got := time.Duration(tr.h.room.HeartbeatEvery()); got != 5*time.Second {
		t.Fatalf("hub heartbeat %v after queue_ttl 15s, want 5s", got)
	}
	tr.clock.Advance(91 * time.Second)
	if _, _, in := tr.jsonView(shopper); in {
		t.Fatal("a PATCHed session_max did not end a session admitted before it was set")
	}
	ctl := tr.h.room
	for body, want := range map[string]string{
		`{"session_max":"0s"}`:                "session_max must be greater than 0",
		`{"session_max":"-1m"}`:               "session_max must be 0 (off) or a positive duration",
		`{"session_max":"soon"}`:              "session_max: bad duration",
		`{"session_max":90}`:                  "session_max must be a duration string",
		`{"session_ttl":"0"}`:                 "session_ttl must be greater than 0",
		`{"queue_ttl":"1000d"}`:               "queue_ttl must be at most",
		`{"away_ttl":"10s"}`:                  "away_ttl (10s) must be 0 or at least queue_ttl (15s)",
		`{"queue_ttl":"6m"}`:                  "must be 0 or at least queue_ttl (6m0s)",
		`{"session_max":"1m","colour":"red"}`: "session_ttl, queue_ttl, away_ttl, session_max",
	} {
		before, _ := tr.h.store.Overrides(context.Background())
		var input room.InputError
		if _, err := ctl.Patch(context.Background(), []byte(body)); err == nil || !strings.Contains(err.Error(), want) || !asInput(err, &input) {
			t.Errorf("PATCH %s: %v, want an input error with %q", body, err, want)
		}
		if after, _ := tr.h.store.Overrides(context.Background()); string(after) != string(before) {
			t.Errorf("rejected PATCH %s changed the overrides: %s -> %s", body, before, after)
		}
	}
	if info := tr.patch(`{"away_ttl":"0"}`); info.AwayTTL != "0s" {
		t.Fatalf("away_ttl 0: %q", info.AwayTTL)
	}
	info = tr.patch(`{"session_max":null,"session_ttl":null,"queue_ttl":null,"away_ttl":null}`)
	if info.SessionMax != "" || info.SessionTTL != "1m0s" || info.QueueTTL != "30s" || info.Overrides != (settings.Overrides{}) {
		t.Fatalf("after restoring: %+v, overrides %+v", info.Timings, info.Overrides)
	}
	if got := time.Duration(tr.h.room.HeartbeatEvery()); got != 10*time.Second {
		t.Fatalf("hub heartbeat %v after queue_ttl restored to 30s, want 10s", got)
	}

	// A configured session_max: "off" lifts it, null brings it back.
	tr2 := newTestRoomWith(t, 1, func(h *Handler) { h.SessionMax = caddy.Duration(time.Minute) })
	if info := tr2.patch(`{"session_max":"off"}`); info.SessionMax != "" || info.Configured.SessionMax != time.Minute {
		t.Fatalf(`session_max "off": effective %q, configured %q`, info.SessionMax, info.Configured.SessionMax)
	}
	if lim := tr2.h.room.Settings(tr2.clock.Now()).Limits(); lim.SessionMax != 0 {
		t.Fatalf(`store limits after "off": session_max %v`, lim.SessionMax)
	}
	if info := tr2.patch(`{"session_max":null}`); info.SessionMax != "1m0s" {
		t.Fatalf("session_max null: %q, want the configured 1m0s", info.SessionMax)
	}
}

// session_max costs the admitted hot path nothing it did not do before: no store call
// beyond the throttled touch, and not one allocation more.
func TestSessionMaxKeepsTheAdmittedPathLocal(t *testing.T) {
	counting := json.RawMessage(`{"type":"counting_test"}`)
	plain := newTestRoomOn(t, 1, counting)
	timed := newTestRoomWith(t, 1, func(h *Handler) { h.StoreRaw = counting; h.SessionMax = caddy.Duration(time.Hour) })
	allocs := map[*testRoom]float64{}
	for _, tr := range []*testRoom{plain, timed} {
		_, c := tr.visit("", "")
		for i := range 1000 {
			tr.visit(c, "")
			if i%100 == 0 {
				tr.clock.Advance(time.Second)
			}
		}
		if n := tr.h.store.(*countingStore).touches.Load(); n > 3 {
			t.Fatalf("session_max %v: 1000 admitted requests over 10s made %d store touches", time.Duration(tr.h.SessionMax), n)
		}
		r := httptest.NewRequest(http.MethodGet, "http://shop.example/tickets", nil)
		r.Header.Set("Cookie", tr.h.Cookie.Name+"="+c)
		w := &discard{h: make(http.Header)}
		next := okHandler()
		allocs[tr] = testalloc.Allocs(5000, func() {
			clear(w.h)
			_ = tr.h.ServeHTTP(w, r, next)
		})
	}
	// The token's MAC comes from a pool, which the race detector empties at random: that
	// adds the same fraction of an allocation to both, well under the one of a new
	// allocation on the path.
	if allocs[timed] > allocs[plain]+0.5 {
		t.Fatalf("an admitted request allocates %.2f times with session_max, %.2f without", allocs[timed], allocs[plain])
	}
}
