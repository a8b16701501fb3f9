package caddytest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// A browser opening a link with a pass goes ahead of the line; the pass leaves the
// address bar at once and the address the page returns to, and never reaches the
// upstream: the visitor lands on the link's page with its other parameters as they
// were.
func TestBrowserPassLinkSkipsTheLine(t *testing.T) {
	room := uniqueRoom(t)
	up := startBrowserSite(t, browserSite{room: room, options: "capacity 1"})
	buyer := newVisitor(t)
	if _, in := buyer.place("/"); !in {
		t.Fatal("the first visitor was queued in an empty room")
	}
	if _, in := newVisitor(t).place("/"); in {
		t.Fatal("a second visitor got into a full room")
	}
	code, body := admin(t, http.MethodPost, "/waiting_room/"+room+"/passes", `{"count": 1}`)
	var res struct{ Passes []string }
	if code != http.StatusOK || json.Unmarshal([]byte(body), &res) != nil || len(res.Passes) != 1 {
		t.Fatalf("POST passes: %d %s", code, body)
	}

	b := newBrowser(t)
	b.do(chromedp.Navigate(liveBase + "/shop?a=1&waiting_room_pass=" + res.Passes[0] + "&b=2"))
	b.showing("wr-position", "1")
	if href := eval[string](b, `location.href`); href != liveBase+"/shop?a=1&b=2" {
		t.Fatalf("the address bar shows %q after the pass did its work", href)
	}
	buyer.get("/checkout", "") // the slot frees: the pass holder is first
	b.landedOn("/shop?a=1&b=2")
	up.mu.Lock()
	defer up.mu.Unlock()
	for _, s := range up.seen {
		if strings.Contains(s, "waiting_room_pass") {
			t.Fatalf("the upstream saw the pass: %s", s)
		}
	}
}
