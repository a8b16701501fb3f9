package waitingroom

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/push"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// useCodeAs opens a hand-off link as a JSON client of account ("" for none) with
// cookie, through Caddy's replacer, and returns the answer and the room cookie.
func (tr *testRoom) useCodeAs(code, account, cookie string) (*httptest.ResponseRecorder, string) {
	tr.t.Helper()
	w, cookie, _ := tr.visitAsAt("http://shop.example/tickets?"+token.HandoffParam+"="+url.QueryEscape(code), account, cookie)
	return w, cookie
}

// A device that presents a key is its key's visitor whatever link it opens: another
// visitor's code does not move that place to the key (a place is not handed from one
// person to another), nor cost the key its own place, nor spend the code, which a
// device without a key still takes afterwards. A code for the key's own place
// changes nothing.
func TestKeyedDeviceTakesNoOtherPlace(t *testing.T) {
	tr := newKeyedTestRoom(t, 1)
	if _, _, keyed := tr.visitAs("", ""); keyed != "false" { // the holder, no key
		t.Fatalf("the holder: keyed %q", keyed)
	}
	_, seller, _ := tr.visitAs("", "") // unkeyed, at 1
	_, bob, _ := tr.visitAs("bob", "") // keyed, at 2
	code := codeOf(t, tr.askHandoff(seller).HandoffURL)

	w, _ := tr.useCodeAs(code, "bob", bob)
	if v := decodeView(t, w); v.Status != "queued" || v.Position != 2 || v.Handoff != "invalid" {
		t.Fatalf("bob opening the seller's code: %s, want still at 2, the code invalid to him", w.Body.String())
	}
	if w, _, _ := tr.visitAs("bob", ""); decodeView(t, w).Position != 2 {
		t.Fatalf("bob on another device afterwards: %s, want at 2", w.Body.String())
	}
	if v := tr.queued(seller); v.Position != 1 {
		t.Fatalf("the seller after bob opened the code: %+v, want still at 1", v)
	}
	w, phone := tr.useCodeAs(code, "", "")
	if v := decodeView(t, w); v.Position != 1 || v.Handoff != "" || tr.tokenOf(phone).ID == tr.tokenOf(seller).ID {
		t.Fatalf("a device without a key opening the code after: %s, want the place moved to it", w.Body.String())
	}

	own := codeOf(t, tr.askHandoff(bob).HandoffURL)
	if w, _ := tr.useCodeAs(own, "bob", ""); decodeView(t, w).Position != 2 || decodeView(t, w).Handoff != "" {
		t.Fatalf("bob opening his own code on another device: %s, want at 2 with no note", w.Body.String())
	}
}

// A device without the key that opened the key's code (a kiosk) holds the key's place
// for away_ttl from its last request, and the opening of its waiting page's WebSocket
// is one: the upgrade's answer carries the cookie renewed (issue 40, item 7). The
// key's own devices keep the queued cookie's 24 hours.
func TestKioskCookieRenewedBySocket(t *testing.T) {
	tr := newKeyedTestRoom(t, 1)
	srv := keyedServer(t, tr)
	tr.visitAs("", "") // the holder of the one slot
	_, laptop, _ := tr.visitAs("alice", "")
	if tok := tr.tokenOf(laptop); !tok.Keyed || !tok.Expires.Equal(tr.clock.Now().Add(token.QueuedLife)) {
		t.Fatalf("alice's own cookie: %+v, want the key's for %v", tok, token.QueuedLife)
	}
	r, _ := http.NewRequest(http.MethodGet, srv.URL+"/tickets", nil)
	r.Header.Set("Accept", "application/json")
	r.Header.Set(accountHeader, "alice")
	r.Header.Set(token.HandoffHeader, "new")
	r.Header.Set("Cookie", tr.h.Cookie.Name+"="+laptop)
	resp, err := srv.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	var a handoffAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || a.HandoffURL == "" {
		t.Fatalf("alice asking for a code: %d, %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	_, kiosk := tr.useCodeAs(codeOf(t, a.HandoffURL), "", "")
	away := time.Duration(*tr.h.AwayTTL)
	if tok := tr.tokenOf(kiosk); tok.ID != tr.tokenOf(laptop).ID || !tok.Keyed || !tok.Expires.Equal(tr.clock.Now().Add(away)) {
		t.Fatalf("the kiosk's cookie: %+v, want alice's place for away_ttl (%v)", tok, away)
	}

	tr.clock.Advance(away / 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, up, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/tickets", &websocket.DialOptions{
		Subprotocols: []string{push.Subprotocol}, HTTPHeader: http.Header{"Cookie": {tr.h.Cookie.Name + "=" + kiosk}},
	})
	if err != nil {
		t.Fatalf("the kiosk's socket: %v", err)
	}
	defer c.CloseNow()
	renewed := ""
	for _, ck := range (&http.Response{Header: up.Header}).Cookies() {
		if ck.Name == tr.h.Cookie.Name {
			renewed = ck.Value
		}
	}
	if renewed == "" {
		t.Fatalf("the kiosk's socket upgrade (%d) set no cookie", up.StatusCode)
	}
	if tok := tr.tokenOf(renewed); tok.ID != tr.tokenOf(laptop).ID || !tok.Keyed || !tok.Expires.Equal(tr.clock.Now().Add(away)) {
		t.Fatalf("the kiosk's cookie from its socket: %+v, want alice's place for away_ttl from now", tok)
	}
}
