package caddytest

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddytest"
	"github.com/chromedp/chromedp"
)

// The console's session controls: session_ttl, session_max, queue_ttl and away_ttl,
// each asks first (a "no" changes nothing), sets the value on "yes" and says so, shows
// the server's reason when the value is refused (and nothing changes), and restores the
// configured value. session_max also turns off.
func TestBrowserConsoleSessionControls(t *testing.T) {
	room := uniqueRoom(t)
	tester := caddytest.NewTester(t)
	proxy := documentedDashboardProxy(t)
	tester.InitServer(proxy.globals(t, "")+fmt.Sprintf(`
http://localhost:%d {
	waiting_room {
		name %s
		capacity 1
		session_ttl 4m
		session_max 30m
		queue_ttl 1m
		away_ttl 10m
	}
	respond "upstream {path}"
}

`, livePort, room)+proxy.site, "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	b := newBrowser(t)
	b.do(chromedp.Navigate("http://localhost:9081/waiting_room/dashboard"))
	card := fmt.Sprintf(`document.querySelector('[data-room=%q]')`, room)
	row := func(key, js string) string {
		return fmt.Sprintf(`(function(){var c=%s;if(!c)return null;var r=c.querySelector('[data-setting=%q]');%s})()`, card, key, js)
	}
	setting := func(key string) string {
		_, raw := consoleInfo(t, room)
		s, _ := raw[key].(string)
		return s
	}
	eventually(t, "the card to show the configured session_max", func() (bool, string) {
		got, err := tryEval[string](b, row("session_max", `return r.querySelector(".setting-now").textContent`))
		return err == nil && got == "30m0s, as configured", got
	})
	answer := func(yes bool) {
		eval[bool](b, fmt.Sprintf(`(function(){window.confirm=function(m){window.asked=m;return %v};return true})()`, yes))
	}
	press := func(key, value, button string) {
		t.Helper()
		// The status line is emptied first, so what it shows next is this press's outcome.
		js := fmt.Sprintf(`document.getElementById("status").textContent="";var i=r.querySelector(".setting-input");i.value=%q;r.querySelector(%q).click();return true`, value, button)
		eval[bool](b, row(key, js))
	}

	for _, tc := range []struct{ key, value, shown, configured, bad, reason string }{
		{"session_ttl", "7m", "7m0s", "4m0s", "0s", "session_ttl must be greater than 0"},
		{"session_max", "15m", "15m0s", "30m0s", "soon", "session_max: bad duration"},
		{"queue_ttl", "2m", "2m0s", "1m0s", "20m", "away_ttl (10m0s) must be 0 or at least queue_ttl (20m0s)"},
		{"away_ttl", "20m", "20m0s", "10m0s", "30s", "away_ttl (30s) must be 0 or at least queue_ttl (1m0s)"},
	} {
		// A "no" changes nothing; the question names the room and the value.
		answer(false)
		press(tc.key, tc.value, ".set-setting")
		b.showing("status", "Cancelled: nothing changed.")
		if got := setting(tc.key); got != tc.configured {
			t.Fatalf("a cancelled %s change made it %q", tc.key, got)
		}
		if asked := eval[string](b, `window.asked || ""`); !strings.Contains(asked, room) || !strings.Contains(asked, tc.value) || !strings.Contains(asked, tc.key) {
			t.Fatalf("the question did not name the setting, the room and the value: %q", asked)
		}
		// A "yes" sets it, and the console says what came of it.
		answer(true)
		press(tc.key, tc.value, ".set-setting")
		b.showing("status", "Done: "+tc.key+" of "+room+" is now "+tc.shown+".")
		if got := setting(tc.key); got != tc.shown {
			t.Fatalf("after the console set %s to %s, the room has %q", tc.key, tc.value, got)
		}
		eventually(t, "the card to show "+tc.key+" set at runtime", func() (bool, string) {
			got, err := tryEval[string](b, row(tc.key, `return r.querySelector(".setting-now").textContent`))
			return err == nil && got == tc.shown+", set at runtime (configured "+tc.configured+")", got
		})
		// A refused value shows the server's reason and changes nothing.
		press(tc.key, tc.bad, ".set-setting")
		eventually(t, "the console to say why "+tc.key+" "+tc.bad+" was refused", func() (bool, string) {
			got, err := b.text("status")
			return err == nil && strings.HasPrefix(got, "Failed: ") && strings.Contains(got, tc.reason) && strings.HasSuffix(got, "(nothing changed)"), got
		})
		if got := setting(tc.key); got != tc.shown {
			t.Fatalf("a refused %s changed it to %q", tc.key, got)
		}
		// Restore brings the configured value back.
		press(tc.key, "", ".clear-setting")
		b.showing("status", "Done: "+tc.key+" of "+room+" is "+tc.configured+" again.")
		if got := setting(tc.key); got != tc.configured {
			t.Fatalf("after restoring %s, the room has %q", tc.key, got)
		}
	}

	// session_max turns off, and the room then ends nobody's session at a fixed time.
	answer(true)
	press("session_max", "", ".off-setting")
	b.showing("status", "Done: session_max of "+room+" is now off.")
	if got := setting("session_max"); got != "" {
		t.Fatalf("after Off, session_max is %q", got)
	}
	if code, body := admin(t, http.MethodGet, "/waiting_room/"+room, ""); code != http.StatusOK || !strings.Contains(body, `"session_max":"0s"`) {
		t.Fatalf("after Off, the overrides should hold session_max 0s: %d %s", code, body)
	}
}
