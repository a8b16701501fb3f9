package waitingroom

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
)

// A bad arrive_ttl is refused at adapt with arrive_ttl's line, by Validate for a JSON
// config, and by the admin API with a reason, and a refused PATCH changes nothing.
func TestArriveTTLRefused(t *testing.T) {
	for _, tc := range []struct {
		name      string
		caddyfile string // from line 4 on
		wantErr   string
	}{
		{"negative", "arrive_ttl -1s", `arrive_ttl: bad duration "-1s": want 0 or a positive duration`},
		{"garbage", "arrive_ttl banana", `arrive_ttl: bad duration "banana"`},
		{"over the cap", "arrive_ttl 1000d", "arrive_ttl must be at most 720h0m0s, got 24000h0m0s"},
		{"missing argument", "arrive_ttl", "wrong argument count"},
		{"two arguments", "arrive_ttl 30s 40s", "wrong argument count"},
		{"below the floor", "arrive_ttl 4s", "arrive_ttl must be at least 5s, got 4s"},
		{"below two polls of a later queue_ttl", "arrive_ttl 15s\n queue_ttl 5m", "arrive_ttl (15s) must be 0 or at least 22s: two polls of a waiting page without a socket, with queue_ttl 5m0s"},
		{"twice", "arrive_ttl 30s\n arrive_ttl 40s", `duplicate subdirective "arrive_ttl"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			input := "waiting_room {\n name a\n capacity 1\n " + tc.caddyfile + "\n}"
			var h Handler
			err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input))
			line := ", at Testfile:4"
			if tc.name == "twice" {
				line = ", at Testfile:5"
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasSuffix(err.Error(), line) {
				t.Errorf("Caddyfile %q: %v, want %q%s", tc.caddyfile, err, tc.wantErr, line)
			}
		})
	}

	for _, tc := range []struct{ json, wantErr string }{
		{`"arrive_ttl":"-1s"`, "arrive_ttl must be 0 (off) or a positive duration, got -1s"},
		{`"arrive_ttl":"1000d"`, "arrive_ttl must be at most 720h0m0s"},
		{`"arrive_ttl":"4s"`, "arrive_ttl must be at least 5s, got 4s"},
		{`"arrive_ttl":"15s","queue_ttl":"5m"`, "arrive_ttl (15s) must be 0 or at least 22s"},
	} {
		var j Handler
		if err := caddy.StrictUnmarshalJSON([]byte(`{"name":"a","capacity":1,`+tc.json+`}`), &j); err != nil {
			t.Fatalf("loading JSON {%s}: %v", tc.json, err)
		}
		if err := j.Validate(); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("JSON {%s}: %v, want %q", tc.json, err, tc.wantErr)
		}
	}
	var j Handler
	if err := caddy.StrictUnmarshalJSON([]byte(`{"name":"a","capacity":1,"arrive_ttl":"banana"}`), &j); err == nil {
		t.Error(`JSON "arrive_ttl":"banana" loaded`)
	}

	tr := newTestRoom(t, 1) // queue_ttl 30s: polls every 2s
	tr.patch(`{"arrive_ttl":"20s"}`)
	before := tr.h.room.Settings(tr.clock.Now()).ArriveTTL
	for _, tc := range []struct{ body, wantErr string }{
		{`{"arrive_ttl":"banana"}`, `arrive_ttl: bad duration "banana"`},
		{`{"arrive_ttl":"-1s"}`, "arrive_ttl must be 0 (off) or a positive duration, got -1s"},
		{`{"arrive_ttl":"1000d"}`, "arrive_ttl must be at most 720h0m0s"},
		{`{"arrive_ttl":"4s"}`, "arrive_ttl must be at least 5s, got 4s"},
		{`{"arrive_ttl":30}`, `arrive_ttl must be a duration string such as "5m", or null, got 30`},
		{`{"queue_ttl":"5m"}`, "arrive_ttl (20s) must be 0 or at least 22s"},
		{`{"queue_ttl":"5m","arrive_ttl":"21s"}`, "arrive_ttl (21s) must be 0 or at least 22s"},
	} {
		_, err := tr.h.room.Patch(context.Background(), []byte(tc.body))
		var in room.InputError
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &in) {
			t.Errorf("PATCH %s: %v, want an input error %q", tc.body, err, tc.wantErr)
		}
	}
	if after := tr.h.room.Settings(tr.clock.Now()).ArriveTTL; after != before {
		t.Errorf("refused PATCHes moved arrive_ttl from %v to %v", before, after)
	}
}

// arrive_ttl defaults to 30s, 0 turns it off, and the admin API shows it and PATCHes
// it (null restores the configured value).
func TestArriveTTLDefaultOffAndPatch(t *testing.T) {
	for _, tc := range []struct {
		caddyfile string
		want      time.Duration
	}{
		{"", 30 * time.Second},
		{"\n arrive_ttl 0", 0},
		{"\n arrive_ttl 45s", 45 * time.Second},
	} {
		var h Handler
		if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser("waiting_room {\n name a\n capacity 1" + tc.caddyfile + "\n}")); err != nil {
			t.Fatalf("%q: %v", tc.caddyfile, err)
		}
		if got := h.arriveTTL(); got != tc.want {
			t.Errorf("%q: arrive_ttl %v, want %v", tc.caddyfile, got, tc.want)
		}
	}
	tr := newTestRoom(t, 1)
	info := tr.patch(`{"arrive_ttl":"0s"}`)
	if info.ArriveTTL != "0s" || info.Configured.ArriveTTL != 30*time.Second {
		t.Errorf("after PATCH 0s: arrive_ttl %q, configured %q; want 0s and 30s", info.ArriveTTL, info.Configured.ArriveTTL)
	}
	if info = tr.patch(`{"arrive_ttl":null}`); info.ArriveTTL != "30s" {
		t.Errorf("after PATCH null: arrive_ttl %q, want the configured 30s", info.ArriveTTL)
	}
}

// A waiter admitted while not listening who makes no request within arrive_ttl gives
// the slot back, and the next waiter goes in. Coming back, the no-show is first,
// ahead of a waiter who came meanwhile, and the page says the turn came while away.
// The waiting page's own socket, told of the admission, is no arrival.
func TestNoShowGivesTheSlotBackAndGoesFirst(t *testing.T) {
	tr := newTestRoomWith(t, 1, func(h *Handler) { h.SessionTTL = caddy.Duration(time.Hour) })
	_, holder := tr.visit("", "")
	_, a := tr.visit("", "application/json")
	_, b := tr.visit("", "application/json")
	tr.queued(a) // a's page answered once, as a real browser's does
	tr.revoke(holder)
	tr.step() // a's turn
	if d := tr.socket(a); d.Outcome != room.TellAdmitted {
		t.Fatalf("a's socket after the admission: outcome %v, want admitted and told", d.Outcome)
	}

	tr.clock.Advance(29 * time.Second)
	tr.queued(b)
	tr.step()
	if info := tr.info(); info.NoShows != 0 || info.Active != 1 || info.Waiting != 1 {
		t.Fatalf("before arrive_ttl: %d no-shows, %d active, %d waiting; want 0, 1, 1", info.NoShows, info.Active, info.Waiting)
	}
	tr.clock.Advance(time.Second)
	tr.step()
	if w, _ := tr.visit(b, "application/json"); w.Body.String() != "upstream" {
		t.Fatalf("b after a's arrive_ttl: %q, want let in", w.Body.String())
	}
	if info := tr.info(); info.NoShows != 1 || info.Away != 1 {
		t.Fatalf("after arrive_ttl: %d no-shows, %d away; want 1 and 1", info.NoShows, info.Away)
	}

	tr.clock.Advance(time.Minute)
	_, c := tr.visit("", "application/json")
	w, _ := tr.visit(a, "text/html")
	if body := w.Body.String(); !strings.Contains(body, `<p class="back" id="wr-back">Welcome back — your turn came while you were away.`) {
		t.Fatalf("a's page when back does not say the turn came while away:\n%s", body)
	}
	if v := tr.queued(a); v.Position != 1 || v.Returned || v.Missed {
		t.Fatalf("a's next answer: %+v, want position 1, no longer returned", v)
	}
	if v := tr.queued(c); v.Position != 2 {
		t.Fatalf("c, who came while a was away: position %d, want 2", v.Position)
	}
	tr.revoke(b)
	tr.step()
	if w, _ := tr.visit(a, ""); w.Body.String() != "upstream" {
		t.Fatalf("a at the next free slot: %q, want let in", w.Body.String())
	}
}

// The JSON answer that brings a no-show back says so.
func TestNoShowBackInJSON(t *testing.T) {
	tr := newTestRoomWith(t, 1, func(h *Handler) { h.SessionTTL = caddy.Duration(time.Hour) })
	_, holder := tr.visit("", "")
	_, a := tr.visit("", "application/json")
	tr.queued(a)
	tr.revoke(holder)
	tr.step()
	tr.clock.Advance(30 * time.Second)
	tr.step()
	w, _ := tr.visit(a, "application/json")
	var v map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || v["missed"] != true || v["returned"] != true || v["position"] != 1.0 {
		t.Fatalf("a back: %s, want position 1, returned and missed", w.Body.String())
	}
}

// A request through the room is the arrival: the page load that follows the
// admission, or the poll of a page without a socket. Then the slot is kept past
// arrive_ttl as any admitted visitor's.
func TestArrivalKeepsTheSlot(t *testing.T) {
	for _, accept := range []string{"text/html", "application/json"} {
		t.Run(accept, func(t *testing.T) {
			tr := newTestRoomWith(t, 1, func(h *Handler) { h.SessionTTL = caddy.Duration(time.Hour) })
			_, holder := tr.visit("", "")
			_, a := tr.visit("", "application/json")
			_, b := tr.visit("", "application/json")
			tr.queued(a)
			tr.revoke(holder)
			tr.step()
			tr.clock.Advance(10 * time.Second)
			w, admitted := tr.visit(a, accept)
			if w.Body.String() != "upstream" {
				t.Fatalf("a after its admission: %q, want let in", w.Body.String())
			}
			tr.queued(b) // b's page polls, so b is present throughout
			tr.clock.Advance(25 * time.Second)
			tr.step()
			if info := tr.info(); info.NoShows != 0 {
				t.Fatalf("a arrived, yet %d no-shows", info.NoShows)
			}
			if w, _ := tr.visit(admitted, ""); w.Body.String() != "upstream" {
				t.Fatalf("a past arrive_ttl: %q, want still let in", w.Body.String())
			}
			if v := tr.queued(b); v.Position != 1 {
				t.Fatalf("b: position %d, want still waiting at 1", v.Position)
			}
		})
	}
}

// A visitor admitted at once on arrival has arrived, however long it is quiet.
func TestAdmittedAtJoinIsNoNoShow(t *testing.T) {
	tr := newTestRoomWith(t, 1, func(h *Handler) { h.SessionTTL = caddy.Duration(time.Hour) })
	_, holder := tr.visit("", "")
	tr.clock.Advance(time.Minute)
	tr.step()
	if w, _ := tr.visit(holder, ""); w.Body.String() != "upstream" || tr.info().NoShows != 0 {
		t.Fatalf("the visitor admitted at join, a minute later: %q, %d no-shows", w.Body.String(), tr.info().NoShows)
	}
}

// A socket told of the admission hands over an admitted cookie; a page that then
// navigates only after arrive_ttl is the no-show coming back, first in line, not a
// new visitor at the back.
func TestLateNavigationAfterTheSocketKeepsTheTurn(t *testing.T) {
	tr := newTestRoomWith(t, 1, func(h *Handler) { h.SessionTTL = caddy.Duration(time.Hour) })
	_, holder := tr.visit("", "")
	_, a := tr.visit("", "application/json")
	tr.queued(a)
	_, b := tr.visit("", "application/json")
	tr.revoke(holder)
	tr.step()
	d := tr.socket(a)
	admitted := string(d.Cookie())
	if d.Outcome != room.TellAdmitted || admitted == "" {
		t.Fatalf("a's socket: outcome %v, cookie %q; want admitted with a cookie", d.Outcome, admitted)
	}
	tr.clock.Advance(20 * time.Second)
	tr.queued(b) // b's page polls, so b is present throughout
	tr.clock.Advance(10 * time.Second)
	tr.step() // a is a no-show, b goes in
	if w, _ := tr.visit(b, ""); w.Body.String() != "upstream" {
		t.Fatalf("b after a's arrive_ttl: %q, want let in", w.Body.String())
	}
	w, _ := tr.visit(admitted, "application/json")
	var v map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || v["position"] != 1.0 || v["missed"] != true {
		t.Fatalf("a navigating late with the socket's cookie: %s, want queued first, missed", w.Body.String())
	}
}

// revoke ends the admitted visitor's session, as the upstream's command does.
func (tr *testRoom) revoke(cookie string) {
	tr.t.Helper()
	tr.respond = func(w http.ResponseWriter, _ *http.Request) { w.Header().Set(commandHeader, "revoke") }
	defer func() { tr.respond = nil }()
	if w, _ := tr.visit(cookie, ""); w.Code != http.StatusOK || tr.respond == nil {
		tr.t.Fatalf("revoke: %d", w.Code)
	}
}

// socket decides on the waiting page's WebSocket opened with cookie.
func (tr *testRoom) socket(cookie string) *room.Decision {
	var d room.Decision
	tr.h.room.Decide(context.Background(), &room.Visit{Now: tr.clock.Now(), Cookie: cookie, Socket: true}, &d)
	return &d
}

func (tr *testRoom) info() room.Info {
	tr.t.Helper()
	info, err := tr.h.room.Info(context.Background())
	if err != nil {
		tr.t.Fatal(err)
	}
	return info
}

// A socket reopened with the admitted cookie an earlier socket was handed is no
// arrival either: a client that only ever opens the waiting socket, keeping every
// cookie the room gives it, is told it is in but gives the slot back at arrive_ttl,
// and the waiter behind goes in.
func TestSocketWithTheAdmittedCookieIsNoArrival(t *testing.T) {
	tr := newTestRoomWith(t, 1, func(h *Handler) { h.SessionTTL = caddy.Duration(time.Hour) })
	_, holder := tr.visit("", "")
	_, a := tr.visit("", "application/json")
	tr.queued(a)
	_, b := tr.visit("", "application/json")
	tr.revoke(holder)
	tr.step()
	d := tr.socket(a)
	admitted := string(d.Cookie())
	if d.Outcome != room.TellAdmitted || admitted == "" {
		t.Fatalf("a's socket: outcome %v, cookie %q; want admitted with a cookie", d.Outcome, admitted)
	}
	for i := range 6 {
		tr.clock.Advance(5 * time.Second)
		tr.queued(b) // b's page polls, so b is present throughout
		// At 30 s, arrive_ttl, the room's own loop may have given the slot back
		// already: the socket is looked at before it only.
		if d := tr.socket(admitted); i < 5 && d.Outcome != room.TellAdmitted {
			t.Fatalf("a's socket again with its admitted cookie: outcome %v, want admitted and told", d.Outcome)
		}
		tr.step()
	}
	if info := tr.info(); info.NoShows != 1 {
		t.Fatalf("a only reopened its socket for 30s, yet %d no-shows, want 1", info.NoShows)
	}
	if w, _ := tr.visit(b, ""); w.Body.String() != "upstream" {
		t.Fatalf("b after a's arrive_ttl: %q, want let in", w.Body.String())
	}
}

// A socket alone is not coming back: the socket a no-show opens, with either cookie,
// does not bring it back (the hub closes it, and the page polls); the page's request
// does, first in line.
func TestSocketAloneDoesNotBringANoShowBack(t *testing.T) {
	tr := newTestRoomWith(t, 1, func(h *Handler) { h.SessionTTL = caddy.Duration(time.Hour) })
	_, holder := tr.visit("", "")
	_, a := tr.visit("", "application/json")
	tr.queued(a)
	tr.revoke(holder)
	tr.step()
	admitted := string(tr.socket(a).Cookie())
	tr.clock.Advance(30 * time.Second)
	tr.step()
	for _, cookie := range []string{a, admitted} {
		if d := tr.socket(cookie); d.Outcome != room.WaitingSocket || d.Status.Position != 0 || !d.Status.Missed {
			t.Fatalf("the no-show's socket: outcome %v, %+v; want queued at position 0, missed", d.Outcome, d.Status)
		}
	}
	tr.step()
	if info := tr.info(); info.Away != 1 || info.Active != 0 || info.NoShows != 1 {
		t.Fatalf("after the no-show's sockets: %d away, %d active, %d no-shows; want 1, 0, 1", info.Away, info.Active, info.NoShows)
	}
	if v := tr.queued(a); v.Position != 1 || !v.Returned || !v.Missed {
		t.Fatalf("the no-show's poll: %+v, want position 1, returned, missed", v)
	}
	tr.step()
	if w, _ := tr.visit(a, ""); w.Body.String() != "upstream" {
		t.Fatalf("the no-show back: %q, want let in", w.Body.String())
	}
}
