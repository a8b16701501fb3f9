package caddytest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddytest"
	"github.com/chromedp/chromedp"
)

// attackPage is a page on another origin that tries to drive the admin API through the
// dashboard's proxy, the way any site the operator visits could: a CORS fetch of
// /admit with JSON, no-cors fetches (text/plain to /admit, bodiless to /reset), and
// forms auto-submitted into a hidden frame (a text/plain one shaped as JSON to
// /admit, an ordinary one to /reset). window.attack says "done" when all have settled.
const attackPage = `<!doctype html><title>Cute cats</title>
<iframe name="sink1" hidden></iframe><iframe name="sink2" hidden></iframe>
<form id="f1" method="post" target="sink1" enctype="text/plain" action="%[1]s/admit"><input name='{"count":1000000,"x":"' value='"}'></form>
<form id="f2" method="post" target="sink2" action="%[1]s/reset"><input name="x" value="1"></form>
<script>
const room = %[1]q;
const settle = p => p.then(r => "answered " + r.status, e => "failed");
const framed = (form, sink) => new Promise(done => {
  document.querySelector("iframe[name=" + sink + "]").addEventListener("load", () => done("loaded"));
  document.getElementById(form).submit();
});
window.attack = "running";
Promise.all([
  settle(fetch(room + "/admit", {method: "POST", headers: {"Content-Type": "application/json"}, body: '{"count":1000000}'})),
  settle(fetch(room + "/admit", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body: '{"count":1000000}'})),
  settle(fetch(room + "/reset", {method: "POST", mode: "no-cors"})),
  framed("f1", "sink1"),
  framed("f2", "sink2"),
]).then(r => { window.results = r; window.attack = "done"; });
</script>`

// adminLogEntry is one line of Caddy's log that the admin endpoint wrote.
type adminLogEntry struct {
	Logger  string              `json:"logger"`
	Msg     string              `json:"msg"`
	Method  string              `json:"method"`
	URI     string              `json:"uri"`
	Headers map[string][]string `json:"headers"`
	Error   string              `json:"error"`
	Status  int                 `json:"status_code"`
}

func readAdminLog(t *testing.T, path string) []adminLogEntry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []adminLogEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e adminLogEntry
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Logger == "admin.api" {
			out = append(out, e)
		}
	}
	return out
}

// The dashboard's documented proxy (Caddyfile.example, run as written) in a real
// browser: pages on two other origins, one on another host (127.0.0.1) and one on
// another port of the same host name (localhost, a sibling site), try every change a
// page can send without the operator's say. Each attempt reaches the admin endpoint
// and is refused there, by Caddy's own cross-site check (the proxy vouches for no
// Origin), and the room is as it was. The dashboard on its own origin still admits
// and resets.
func TestBrowserDashboardProxyRefusesOtherSites(t *testing.T) {
	room := uniqueRoom(t)
	proxy := documentedDashboardProxy(t)
	logFile := filepath.Join(t.TempDir(), "caddy.log")
	tester := caddytest.NewTester(t)
	tester.InitServer(proxy.globals(t, fmt.Sprintf("\tlog {\n\t\toutput file %s\n\t\tformat json\n\t}\n", logFile))+
		fmt.Sprintf(`
http://localhost:%d {
	waiting_room {
		name %s
		capacity 1
		session_ttl 1h
		queue_ttl 1h
	}
	respond "upstream {path}"
}

`, livePort, room)+proxy.site, "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	for range 4 {
		newVisitor(t).place("/")
	}
	before := roomInfo(t, room)
	if before.Active != 1 || before.Waiting != 3 {
		t.Fatalf("the room before the attack: %+v", before)
	}

	roomURL := "http://localhost:9081/waiting_room/" + room
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, attackPage, roomURL)
	}))
	t.Cleanup(attacker.Close)
	port := attacker.URL[strings.LastIndex(attacker.URL, ":")+1:]

	b := newBrowser(t)
	for _, origin := range []string{"http://127.0.0.1:" + port, "http://localhost:" + port} {
		b.do(chromedp.Navigate(origin + "/"))
		eventually(t, "the page on "+origin+" to finish its attempts", func() (bool, string) {
			got, err := tryEval[string](b, `window.attack || ""`)
			return err == nil && got == "done", got
		})
		t.Logf("%s: %v", origin, eval[[]string](b, `window.results`))
		if after := roomInfo(t, room); after.Active != before.Active || after.Waiting != before.Waiting ||
			after.AdmittedTotal != before.AdmittedTotal {
			t.Fatalf("a page on %s changed the room: %+v -> %+v", origin, before, after)
		}
	}

	// Every attempt reached the admin endpoint (so nothing passed for not being sent),
	// and every one was refused by the endpoint's own check of where it came from, not
	// left to the waiting room's routes.
	var reached, refused []string
	for _, e := range readAdminLog(t, logFile) {
		switch {
		case e.Msg == "received request" && strings.HasPrefix(e.URI, "/waiting_room/"+room+"/") &&
			e.Method != http.MethodGet && strings.Contains(strings.Join(e.Headers["Sec-Fetch-Site"], ","), "site"):
			reached = append(reached, e.Method+" "+strings.TrimPrefix(e.URI, "/waiting_room/"+room))
		case e.Msg == "request error":
			if !strings.Contains(e.Error, "not allowed to access from origin") && !strings.Contains(e.Error, "no-cors") {
				t.Errorf("a page on another site got past the admin endpoint's cross-site check, to: %d %s", e.Status, e.Error)
			}
			refused = append(refused, e.Error)
		}
	}
	for _, want := range []string{"OPTIONS /admit", "POST /admit", "POST /reset"} {
		n := 0
		for _, r := range reached {
			if r == want {
				n++
			}
		}
		if n < 2 { // at least one from each origin
			t.Errorf("%q reached the admin endpoint %d times; all that reached it: %v", want, n, reached)
		}
	}
	if len(refused) != len(reached) {
		t.Errorf("%d attempts reached the admin endpoint, %d were refused: %v", len(reached), len(refused), refused)
	}

	// The dashboard itself, on the proxy's origin, still changes the room.
	b.do(chromedp.Navigate("http://localhost:9081/waiting_room/dashboard"))
	card := fmt.Sprintf(`document.querySelector('[data-room=%q]')`, room)
	eventually(t, "the dashboard to show the room", func() (bool, string) {
		got, err := tryEval[bool](b, card+` !== null`)
		return err == nil && got, fmt.Sprint(err)
	})
	eval[bool](b, `(function(){window.confirm=function(){return true};return true})()`)
	eval[bool](b, fmt.Sprintf(`(function(){var c=%s;c.querySelector('.admit-input').value='2';c.querySelector('.admit').click();return true})()`, card))
	eventually(t, "the dashboard's admit to let two in", func() (bool, string) {
		info := roomInfo(t, room)
		return info.Active == before.Active+2 && info.Waiting == before.Waiting-2, fmt.Sprintf("%+v", info)
	})
	eval[bool](b, fmt.Sprintf(`(function(){%s.querySelector('.reset').click();return true})()`, card))
	eventually(t, "the dashboard's reset to empty the room", func() (bool, string) {
		info := roomInfo(t, room)
		return info.Active == 0 && info.Waiting == 0, fmt.Sprintf("%+v", info)
	})
}
