package caddytest

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The dashboard in a real browser, reached the way Caddyfile.example says: through a local
// proxy that forwards /waiting_room/* to the admin endpoint (which refuses pages a
// browser opens directly). The page loads, its numbers match the API, and a button
// changes the room.
func TestDashboardInBrowser(t *testing.T) {
	room := uniqueRoom(t)
	startSiteWithConsole(t, fmt.Sprintf(`
http://localhost:%d {
	waiting_room {
		name %s
		capacity 1
	}
	respond "upstream {path}"
}

`, livePort, room))
	for i := 0; i < 4; i++ {
		newVisitor(t).place("/")
	}
	// Opened directly, the admin endpoint refuses a browser's page load: this is why
	// the proxy exists.
	req, _ := http.NewRequest(http.MethodGet, adminBase+"/waiting_room/dashboard", nil)
	req.Header.Set("Sec-Fetch-Mode", "navigate")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode == http.StatusOK {
		t.Fatalf("the admin endpoint served the dashboard to a browser navigation: %v %v", resp, err)
	}

	b := newBrowser(t)
	b.do(chromedp.Navigate("http://localhost:9081/waiting_room/dashboard"))
	card := fmt.Sprintf(`document.querySelector('[data-room=%q]')`, room)
	field := func(class string) (string, error) {
		return tryEval[string](b, fmt.Sprintf(`(function(){var c=%s;var e=c&&c.querySelector(%q);return e?e.textContent:""})()`, card, "."+class))
	}
	api := roomInfo(t, room)
	eventually(t, "the dashboard to show the API's numbers", func() (bool, string) {
		active, err1 := field("active")
		waiting, err2 := field("waiting")
		want := fmt.Sprintf("%d / %d", api.Active, api.Capacity)
		return err1 == nil && err2 == nil && active == want && waiting == fmt.Sprint(api.Waiting),
			fmt.Sprintf("active %q waiting %q, API says %s and %d", active, waiting, want, api.Waiting)
	})

	// Every control is labelled for assistive technology.
	unlabelled := eval[int](b, `Array.from(document.querySelectorAll('button, input')).filter(function(e){
		return !(e.textContent.trim() || (e.labels && e.labels.length) || e.getAttribute('aria-label'))}).length`)
	if unlabelled != 0 {
		t.Fatalf("%d controls without an accessible name", unlabelled)
	}

	// "Admit now" asks first, then lets two waiters in beyond capacity.
	eval[bool](b, `(function(){window.confirm=function(m){window.asked=m;return true};return true})()`)
	eval[bool](b, fmt.Sprintf(`(function(){var c=%s;c.querySelector('.admit-input').value='2';c.querySelector('.admit').click();return true})()`, card))
	eventually(t, "the API to show two more admitted", func() (bool, string) {
		info := roomInfo(t, room)
		return info.Active == api.Active+2 && info.Waiting == api.Waiting-2, fmt.Sprintf("%+v", info)
	})
	if asked := eval[string](b, `window.asked || ""`); !strings.Contains(asked, room) || !strings.Contains(asked, "2") {
		t.Fatalf("the admit button did not ask for confirmation naming the room: %q", asked)
	}
	eventually(t, "the dashboard to follow", func() (bool, string) {
		active, _ := field("active")
		return active == fmt.Sprintf("%d / %d", api.Active+2, api.Capacity), active
	})
	if n := eval[int](b, `document.querySelectorAll('script[src], link[rel=stylesheet], img[src^=http]').length`); n != 0 {
		t.Fatalf("the dashboard loads %d external resources", n)
	}
}
