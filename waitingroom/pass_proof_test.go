package waitingroom

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// A valid pass stands for the proof of work: its holder joins without a challenge. A
// forged one does not, nor one whose uses are spent.
func TestPassStandsForTheProof(t *testing.T) {
	tr := newProofRoom(t, 1, 8)
	if _, _, seen := tr.passVisit("http://shop.example/", tr.mint(1), ""); seen == nil {
		t.Fatal("the first pass holder, in an empty room with proof_of_work, was not let in")
	}
	spent := tr.mint(1)
	w, _, _ := tr.passVisit("http://shop.example/", spent, "")
	if v := viewOf(t, w); v.Status != "queued" || v.Position != 1 {
		t.Fatalf("a pass holder in a room with proof_of_work: %d %+v, want queued at 1", w.Code, v)
	}
	for _, pass := range []string{"forged", spent} {
		w, _, _ = tr.passVisit("http://shop.example/", pass, "")
		if v := viewOf(t, w); v.Status != "challenge" {
			t.Fatalf("pass %q in a room with proof_of_work: %d %+v, want a challenge", pass, w.Code, v)
		}
	}
	if n := tr.waiting(); n != 1 {
		t.Fatalf("%d waiting, want only the pass holder", n)
	}
}

// A cookie that holds a pass lets its visitor join again as invited once its place is
// gone (invite_only), without using the pass again, but only once fleet-wide: copies
// of one invited cookie do not each make a place.
func TestCopiedInvitedCookieRejoinsOnce(t *testing.T) {
	tr := newRoomWith(t, func(h *Handler) {})
	tr.fill(1)
	if _, err := tr.h.room.Patch(context.Background(), []byte(`{"mode":"invite_only"}`)); err != nil {
		t.Fatal(err)
	}
	w, cookie, _ := tr.passVisit("http://shop.example/", tr.mint(1), "")
	if v := viewOf(t, w); v.Status != "queued" {
		t.Fatalf("the pass holder: %+v, want queued", v)
	}
	tok, ok := tr.h.room.Keys().Open(cookie, time.Now())
	if !ok || !tok.Pass {
		t.Fatalf("the pass holder's cookie does not hold the pass: %+v %v", tok, ok)
	}
	if left, err := tr.h.store.Leave(context.Background(), tok.ID); err != nil || !left {
		t.Fatalf("taking the place away: %v %v", left, err)
	}
	before := tr.waiting()
	var statuses []string
	for range 3 { // the cookie, and two copies of it
		w, _, _ := tr.passVisit("http://shop.example/", "", cookie)
		statuses = append(statuses, viewOf(t, w).Status)
		if w.Code != http.StatusOK && w.Code != tr.h.RejectStatusCode {
			t.Fatalf("copy answered %d", w.Code)
		}
	}
	if statuses[0] != "queued" || statuses[1] != "rejected" || statuses[2] != "rejected" {
		t.Fatalf("one invited cookie presented three times after its place went: %v, want queued then rejected twice", statuses)
	}
	if n := tr.waiting(); n != before+1 {
		t.Fatalf("%d waiting, %d before: want the one rejoined", n, before)
	}
}
