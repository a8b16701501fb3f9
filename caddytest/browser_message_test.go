package caddytest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// The operator's message reaches an open waiting page without a reload, as text: a
// hostile message is shown, never run or parsed as markup, and the live region
// announces it once. A page loaded after the change has it from the server, escaped.
func TestBrowserMessageAppearsAsText(t *testing.T) {
	room := uniqueRoom(t)
	startBrowserSite(t, browserSite{room: room, options: "capacity 1"})
	if _, in := newVisitor(t).place("/"); !in {
		t.Fatal("the first visitor was queued in an empty room")
	}

	b := newBrowser(t)
	b.enableNetwork()
	b.do(chromedp.Navigate(liveBase + "/"))
	b.showing("wr-position", "1")
	first, _ := b.untilReported("the page's load", 0, func(e pageEvent) bool { return e.Kind == "load" })
	if hidden := eval[bool](b, `document.getElementById("wr-message").hidden`); !hidden {
		t.Fatal("the message box shows while there is no message")
	}
	var mu sync.Mutex
	messageFrames := 0
	if err := chromedp.Listen(b.ctx, func(ev any) {
		if e, ok := ev.(*network.EventWebSocketFrameReceived); ok && strings.Contains(string(e.Response.PayloadData), `"type":"message"`) {
			mu.Lock()
			messageFrames++
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}

	const hostile = `<img src=x onerror=alert(1)>`
	body, _ := json.Marshal(map[string]string{"message": hostile})
	if code, resp := admin(t, http.MethodPatch, "/waiting_room/"+room, string(body)); code != http.StatusOK {
		t.Fatalf("PATCH: %d %s", code, resp)
	}
	b.showing("wr-message", hostile)
	got := eval[[]any](b, `(function(){var m=document.getElementById("wr-message");
		return [m.hidden, m.children.length, document.querySelectorAll("img:not(#wr-handoff-qr)").length, m.innerHTML]})()`)
	if got[0] != false || got[1] != float64(0) || got[2] != float64(0) || got[3] != "&lt;img src=x onerror=alert(1)&gt;" {
		t.Fatalf("the message box: hidden %v, %v child elements, %v images in the document besides the hand-off QR code, innerHTML %q", got[0], got[1], got[2], got[3])
	}
	announced, _ := b.untilReported("the live region to announce the message", 0, func(e pageEvent) bool {
		return e.Kind == "live" && e.Text == hostile
	})
	if announced.Doc != first.Doc {
		t.Fatal("the page reloaded to show the message")
	}
	loads := 0
	for _, e := range b.log.snapshot() {
		if e.Kind == "load" {
			loads++
		}
		if e.Kind == "csp" {
			t.Fatalf("a CSP violation: %s", e.Text)
		}
	}
	if loads != 1 {
		t.Fatalf("%d page loads; the message must arrive without a reload", loads)
	}
	mu.Lock()
	if messageFrames == 0 {
		t.Fatal("the message did not come over the page's WebSocket")
	}
	mu.Unlock()

	// A page loaded now has the message in its HTML, escaped.
	later := newBrowser(t)
	later.do(chromedp.Navigate(liveBase + "/"))
	later.showing("wr-message", hostile)
	if n := eval[float64](later, `document.querySelectorAll("img:not(#wr-handoff-qr)").length`); n != 0 {
		t.Fatalf("the server-rendered message made %v images", n)
	}

	// Cleared: the open page hides it.
	if code, resp := admin(t, http.MethodPatch, "/waiting_room/"+room, `{"message": null}`); code != http.StatusOK {
		t.Fatalf("PATCH: %d %s", code, resp)
	}
	eventually(t, "the cleared message to be hidden", func() (bool, string) {
		h, err := tryEval[bool](b, `document.getElementById("wr-message").hidden`)
		return err == nil && h, fmt.Sprint(h, err)
	})
}
