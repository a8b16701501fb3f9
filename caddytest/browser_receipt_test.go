package caddytest

import (
	"encoding/json"
	"testing"

	"github.com/chromedp/chromedp"
)

// The waiting page in a browser shows the draw: "Check the draw" links to the room's
// draw page, in the page's language, and "Your receipt", opened, shows the waiter's
// signed receipt, which the page asked for then and not before. Without a draw page
// (draw_page off) neither is there.
func TestBrowserPageShowsTheReceipt(t *testing.T) {
	room := uniqueRoom(t)
	startBrowserSite(t, browserSite{room: room, options: "capacity 1\n\t\tdraw_page /draw"})
	newVisitor(t).place("/")
	for _, lang := range []struct{ tag, link, panel string }{
		{"en", "Check the draw", "Your receipt"},
		{"ko", "추첨 확인하기", "내 접수증"},
	} {
		b := newBrowser(t)
		b.acceptLanguage(lang.tag)
		b.do(chromedp.Navigate(liveBase + "/tickets"))
		eventually(t, "the waiting page", func() (bool, string) {
			id, err := tryEval[string](b, `document.getElementById("wr-position") ? "in line" : ""`)
			return err == nil && id != "", id
		})
		if got := eval[[]string](b, `[document.getElementById("wr-draw").textContent, document.getElementById("wr-draw").getAttribute("href"),
			document.querySelector("#wr-receipt summary").textContent, String(document.getElementById("wr-receipt").hidden)]`); got[0] != lang.link ||
			got[1] != "/draw" || got[2] != lang.panel || got[3] != "false" {
			t.Fatalf("%s: the draw link and the receipt's panel: %q", lang.tag, got)
		}
		if got := eval[string](b, `document.getElementById("wr-receipt-json").textContent`); got != "" {
			t.Fatalf("%s: the receipt was there before the panel was opened: %q", lang.tag, got)
		}
		eval[chromedp.Void](b, `document.querySelector("#wr-receipt summary").click()`)
		var shown string
		eventually(t, "the receipt shown", func() (bool, string) {
			shown = eval[string](b, `document.getElementById("wr-receipt-json").textContent`)
			return shown != "", shown
		})
		var r struct {
			Room, Draw, Entry, Signature string
			Ticket                       uint64
		}
		if err := json.Unmarshal([]byte(shown), &r); err != nil || r.Room != room || r.Draw != "fifo" || len(r.Signature) != 86 || r.Ticket == 0 {
			t.Fatalf("%s: the receipt shown: %q (%v)", lang.tag, shown, err)
		}
	}

	off := uniqueRoom(t)
	startBrowserSite(t, browserSite{room: off, options: "capacity 1\n\t\tdraw_page off"})
	newVisitor(t).place("/")
	b := newBrowser(t)
	b.do(chromedp.Navigate(liveBase + "/tickets"))
	eventually(t, "the waiting page", func() (bool, string) {
		id, err := tryEval[string](b, `document.getElementById("wr-position") ? "in line" : ""`)
		return err == nil && id != "", id
	})
	if got := eval[bool](b, `!!(document.getElementById("wr-draw") || document.getElementById("wr-receipt"))`); got {
		t.Fatal("with draw_page off the page still has the draw's link or the receipt's panel")
	}
}
