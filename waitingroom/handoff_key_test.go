package waitingroom

import (
	"net/http/httptest"
	"net/url"
	"testing"
)

// useCodeAs opens a hand-off link as a JSON client of account ("" for none) with
// cookie, through Caddy's replacer, and returns the answer and the room cookie.
func (tr *testRoom) useCodeAs(code, account, cookie string) (*httptest.ResponseRecorder, string) {
	tr.t.Helper()
	w, cookie, _ := tr.visitAsAt("http://shop.example/tickets?"+handoffParam+"="+url.QueryEscape(code), account, cookie)
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
