package caddytest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// Two devices, two browsers: the first waits, asks to continue on another device and
// is shown a QR code and the link; the second opens the link and sees the first's
// place, with the code gone from its address bar; the first's page says the place
// moved and offers nothing more. Neither page raises a CSP violation, QR code shown.
func TestBrowserHandoffMovesThePlace(t *testing.T) {
	room := uniqueRoom(t)
	up := startBrowserSite(t, browserSite{room: room, options: "capacity 1"})
	if _, in := newVisitor(t).place("/"); !in {
		t.Fatal("the first visitor was queued in an empty room")
	}
	if _, in := newVisitor(t).place("/"); in {
		t.Fatal("a second visitor got into a full room")
	}

	laptop := newBrowser(t)
	laptop.do(chromedp.Navigate(liveBase + "/shop?a=1"))
	laptop.showing("wr-position", "2")
	eval[any](laptop, `document.getElementById("wr-handoff").click()`)
	var link string
	eventually(t, "the link to continue on another device", func() (bool, string) {
		got, err := tryEval[[]any](laptop, `(function(){var l=document.getElementById("wr-handoff-link"),q=document.getElementById("wr-handoff-qr");
			return [l.value, q.complete && q.naturalWidth, document.getElementById("wr-handoff-shown").hidden, document.activeElement === l,
				l.labels.length ? l.labels[0].textContent : ""]})()`)
		if err != nil || len(got) != 5 {
			return false, fmt.Sprintf("%v (%v)", got, err)
		}
		link, _ = got[0].(string)
		width, _ := got[1].(float64)
		hidden, _ := got[2].(bool)
		focused, _ := got[3].(bool)
		label, _ := got[4].(string)
		return strings.HasPrefix(link, liveBase+"/shop?a=1&waiting_room_handoff=") && width == 232 && !hidden && focused && label != "",
			fmt.Sprintf("link %q, QR %v px wide, panel hidden %v, link focused %v, label %q", link, width, hidden, focused, label)
	})

	phone := newBrowser(t)
	phone.do(chromedp.Navigate(link))
	phone.showing("wr-position", "2")
	if href := eval[string](phone, `location.href`); href != liveBase+"/shop?a=1" {
		t.Fatalf("the phone's address bar shows %q after the code did its work", href)
	}
	eventually(t, "the laptop's page to say its place moved", func() (bool, string) {
		got, err := tryEval[[]any](laptop, `[!!document.getElementById("wr-moved"), document.querySelectorAll("button, a[href], script[nonce]").length, document.title]`)
		if err != nil || len(got) != 3 {
			return false, fmt.Sprintf("%v (%v)", got, err)
		}
		moved, _ := got[0].(bool)
		controls, _ := got[1].(float64)
		return moved && controls == 0, fmt.Sprintf("moved section %v, %v controls, title %q", got[0], controls, got[2])
	})
	phone.showing("wr-position", "2")

	for name, b := range map[string]*tab{"laptop": laptop, "phone": phone} {
		for _, e := range b.log.snapshot() {
			if e.Kind == "csp" {
				t.Errorf("%s: CSP violation: %s", name, e.Text)
			}
		}
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	for _, s := range up.seen {
		if strings.Contains(s, "waiting_room_handoff") {
			t.Fatalf("the upstream saw the code: %s", s)
		}
	}
}
