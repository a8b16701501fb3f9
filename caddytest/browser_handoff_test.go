package caddytest

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
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
	link := askHandoffLink(t, laptop, liveBase+"/shop?a=1")

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

// askHandoffLink presses "Continue on another device" on b's waiting page at address
// and returns the link it shows, once the link, its label, focus and the QR code are
// all there.
func askHandoffLink(t *testing.T, b *tab, address string) string {
	t.Helper()
	eval[any](b, `document.getElementById("wr-handoff").click()`)
	var link string
	eventually(t, "the link to continue on another device", func() (bool, string) {
		got, err := tryEval[[]any](b, `(function(){var l=document.getElementById("wr-handoff-link"),q=document.getElementById("wr-handoff-qr");
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
		return strings.HasPrefix(link, address+"&waiting_room_handoff=") && width == 232 && !hidden && focused && label != "",
			fmt.Sprintf("link %q, QR %v px wide, panel hidden %v, link focused %v, label %q", link, width, hidden, focused, label)
	})
	return link
}

// linkPage is a page on another site that links to a hand-off link: any page can,
// the link being a code its author got for its own place.
const linkPage = `<!doctype html><title>Free tickets</title><a id="go" href="%s">Skip the line</a>`

// A page on another site links to someone's hand-off code. A visitor who holds a
// place and follows the link keeps it: the same position, told the link came from
// another site, the code gone from the address bar; the code's holder keeps its
// place, and the code still moves it when opened by hand (typed, pasted, scanned).
// A same-site page on another port is another origin too, and refused the same way.
func TestBrowserHandoffFromAnotherSiteKeepsThePlace(t *testing.T) {
	room := uniqueRoom(t)
	startBrowserSite(t, browserSite{room: room, options: "capacity 1"})
	if _, in := newVisitor(t).place("/"); !in {
		t.Fatal("the first visitor was queued in an empty room")
	}
	seller := newBrowser(t)
	seller.do(chromedp.Navigate(liveBase + "/shop?a=1"))
	seller.showing("wr-position", "1")
	link := askHandoffLink(t, seller, liveBase+"/shop?a=1")

	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, linkPage, html.EscapeString(link))
	}))
	t.Cleanup(site.Close)
	port := site.URL[strings.LastIndex(site.URL, ":")+1:]

	visitor := newBrowser(t)
	visitor.do(chromedp.Navigate(liveBase + "/shop?a=1"))
	visitor.showing("wr-position", "2")
	for _, origin := range []string{"http://127.0.0.1:" + port, "http://localhost:" + port} {
		visitor.do(chromedp.Navigate(origin + "/"))
		eval[any](visitor, `setTimeout(function(){document.getElementById("go").click()}, 0)`)
		eventually(t, "the visitor's page after following the link on "+origin, func() (bool, string) {
			got, err := tryEval[[]any](visitor, `(function(){var n=document.getElementById("wr-handoff-refused"),p=document.getElementById("wr-position");
				return [location.href, n ? n.textContent : "", p ? p.textContent : ""]})()`)
			if err != nil || len(got) != 3 {
				return false, fmt.Sprintf("%v (%v)", got, err)
			}
			href, _ := got[0].(string)
			notice, _ := got[1].(string)
			position, _ := got[2].(string)
			return href == liveBase+"/shop?a=1" && strings.Contains(notice, "another site") && position == "2",
				fmt.Sprintf("address %q, notice %q, position %q", href, notice, position)
		})
		seller.showing("wr-position", "1")
		if moved := eval[bool](seller, `!!document.getElementById("wr-moved")`); moved {
			t.Fatalf("following the link on %s moved the seller's place", origin)
		}
	}

	// By hand: the visitor gives up its own place for the one the code names.
	visitor.do(chromedp.Navigate(link))
	visitor.showing("wr-position", "1")
	eventually(t, "the seller's page to say its place moved", func() (bool, string) {
		moved, err := tryEval[bool](seller, `!!document.getElementById("wr-moved")`)
		return err == nil && moved, fmt.Sprint(err)
	})
	noCSPViolations(visitor)
}
