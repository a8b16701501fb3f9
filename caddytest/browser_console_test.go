package caddytest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"
	"github.com/chromedp/chromedp"
)

// The console smoke test: a room with a waiter let in from the line (so the server's
// history has a wait) and an event scheduled tomorrow. The console shows the event's
// countdown and charts with points that came from the server; a control asks first, a
// "no" changes nothing, a "yes" changes the room and the console says what came of it;
// the message box reaches the line. Writes examples/console.png with -update-screenshot.
func TestBrowserConsoleSmoke(t *testing.T) {
	room := uniqueRoom(t)
	start := time.Now().Add(26 * time.Hour).UTC().Truncate(time.Second)
	tester := caddytest.NewTester(t)
	proxy := documentedDashboardProxy(t)
	tester.InitServer(proxy.globals(t, "")+fmt.Sprintf(`
http://localhost:%d {
	waiting_room {
		name %s
		capacity 1
		rate 30 1m
		event %s %s {
			prequeue 10m
			shuffle
		}
	}
	handle /checkout {
		header Waiting-Room-Command revoke
		respond "order placed"
	}
	respond "upstream {path}"
}

`, livePort, room, start.Format(time.RFC3339), start.Add(2*time.Hour).Format(time.RFC3339))+proxy.site, "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	buyer := newVisitor(t)
	if _, in := buyer.place("/"); !in {
		t.Fatal("the first visitor was queued in an empty room")
	}
	waiter := newVisitor(t)
	if _, in := waiter.place("/"); in {
		t.Fatal("the second visitor was admitted into a full room")
	}
	for range 5 {
		newVisitor(t).place("/")
	}
	buyer.get("/checkout", "")
	eventually(t, "the waiter to be let in", func() (bool, string) {
		_, in := waiter.place("/")
		return in, ""
	})

	b := newBrowser(t)
	b.do(chromedp.EmulateViewport(1280, 1400), chromedp.Navigate("http://localhost:9081/waiting_room/dashboard"))
	card := fmt.Sprintf(`document.querySelector('[data-room=%q]')`, room)
	inCard := func(js string) string { return fmt.Sprintf(`(function(){var c=%s;if(!c)return null;%s})()`, card, js) }

	eventually(t, "the next event's countdown", func() (bool, string) {
		got, err := tryEval[string](b, inCard(`var e=c.querySelector(".event");return e.hidden?"hidden":e.textContent`))
		return err == nil && strings.HasPrefix(got, "Next event starts in 1d 0") && strings.Contains(got, "(with a draw)"), got
	})
	eventually(t, "both charts to have points from the server's history", func() (bool, string) {
		got, err := tryEval[[]float64](b, inCard(`return [c.querySelectorAll(".chart-adm .point").length,
			c.querySelectorAll(".chart-wait .point").length]`))
		return err == nil && len(got) == 2 && got[0] >= 1 && got[1] >= 2, fmt.Sprint(got, err)
	})
	info, raw := consoleInfo(t, room)
	_, hasAway := raw["away"]
	if hidden := eval[bool](b, inCard(`return c.querySelector(".away-stat").hidden`)); hidden == hasAway {
		t.Fatalf("the away figure is hidden=%v while the room object has away=%v", hidden, hasAway)
	}
	if info.NextEvent == nil || string(info.NextEvent) == "null" {
		t.Fatalf("the room object has no next_event")
	}

	// Every control is labelled for assistive technology.
	unlabelled := eval[int](b, `Array.from(document.querySelectorAll('button, input, select, textarea')).filter(function(e){
		return !(e.textContent.trim() || (e.labels && e.labels.length) || e.getAttribute('aria-label'))}).length`)
	if unlabelled != 0 {
		t.Fatalf("%d controls without an accessible name", unlabelled)
	}

	// A "no" changes nothing.
	eval[bool](b, `(function(){window.confirm=function(m){window.asked=m;return false};return true})()`)
	eval[bool](b, inCard(`c.querySelector(".cap-input").value="3";c.querySelector(".set-cap").click();return true`))
	b.showing("status", "Cancelled: nothing changed.")
	if now, _ := consoleInfo(t, room); now.Capacity != info.Capacity {
		t.Fatalf("a cancelled change changed the capacity: %d -> %d", info.Capacity, now.Capacity)
	}
	if asked := eval[string](b, `window.asked || ""`); !strings.Contains(asked, room) || !strings.Contains(asked, "3") {
		t.Fatalf("the question did not name the room and the value: %q", asked)
	}

	// A "yes" changes the room, and the console says what came of it.
	eval[bool](b, `(function(){window.confirm=function(m){window.asked=m;return true};return true})()`)
	eval[bool](b, inCard(`c.querySelector(".cap-input").value="3";c.querySelector(".set-cap").click();return true`))
	b.showing("status", "Done: the capacity of "+room+" is now 3.")
	if now, _ := consoleInfo(t, room); now.Capacity != 3 {
		t.Fatalf("after the console set it, the capacity is %d", now.Capacity)
	}
	eval[bool](b, inCard(`c.querySelector(".mode-input").value="queue_all";c.querySelector(".set-mode").click();return true`))
	b.showing("status", "Done: "+room+" now runs in mode queue_all.")

	const text = "Tickets for Saturday are sold out. Friday remains."
	eval[bool](b, inCard(fmt.Sprintf(`c.querySelector(".message-input").value=%q;c.querySelector(".set-message").click();return true`, text)))
	b.showing("status", "Done: everyone in line of "+room+" is told: "+text)
	if now, _ := consoleInfo(t, room); now.Message != text {
		t.Fatalf("after the console sent it, the room's message is %q", now.Message)
	}
	eventually(t, "the card to show the message", func() (bool, string) {
		got, err := tryEval[string](b, inCard(`return c.querySelector(".message-now").textContent`))
		return err == nil && got == "Told now: "+text, got
	})
	// The waiting page of someone in line says it too.
	if code, _, body := newVisitor(t).get("/", "application/json"); code != http.StatusOK || !strings.Contains(body, text) {
		t.Fatalf("a new waiter's answer: %d %s", code, body)
	}
	if n := eval[int](b, `document.querySelectorAll('script[src], link[rel=stylesheet], img[src^=http]').length`); n != 0 {
		t.Fatalf("the console loads %d external resources", n)
	}

	ctx, cancel := context.WithTimeout(b.ctx, liveness)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("artifacts", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("artifacts", "console.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	if *updateScreenshot || os.Getenv("WAITING_ROOM_UPDATE_SCREENSHOT") != "" {
		if err := os.WriteFile(filepath.Join("..", "examples", "console.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("updated examples/console.png")
	}
}
