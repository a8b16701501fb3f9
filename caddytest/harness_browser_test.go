package caddytest

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"
	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// The browser tests drive Debian's headless chromium against a real Caddy (the
// caddytest harness) in front of a Go upstream that records what reached it. Here
// are that upstream, the site in front of it, and the tab: every way the tests
// drive a page (network, visibility, lifecycle, media, permissions) and read it.

// upstream is the site behind the waiting room. It records every request that
// reached it, answers "upstream <method> <uri>" as text, ends the session at
// /checkout with the revoke command, and serves a form at /form (which the
// browser tests keep outside the room).
type upstream struct {
	srv *httptest.Server

	mu   sync.Mutex
	seen []string // "METHOD /uri"
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		u.mu.Lock()
		u.seen = append(u.seen, r.Method+" "+r.URL.RequestURI())
		u.mu.Unlock()
		switch r.URL.Path {
		case "/form":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			// No /favicon.ico: the browser would ask for it through the room, as a
			// visitor of its own racing the form's POST for the first place.
			fmt.Fprint(w, `<!doctype html><html lang="en"><title>Buy</title><link rel="icon" href="data:,">
<form method="post" action="/order?item=7"><input name="qty" value="2"><button id="buy">Buy</button></form>`)
			return
		case "/checkout":
			w.Header().Set("Waiting-Room-Command", "revoke")
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "upstream %s %s", r.Method, r.URL.RequestURI())
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// requests returns what reached the upstream for uri, as "METHOD /uri".
func (u *upstream) requests(uri string) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []string
	for _, s := range u.seen {
		if _, got, _ := strings.Cut(s, " "); got == uri {
			out = append(out, s)
		}
	}
	return out
}

// browserSite is a site like liveConfig's, but proxied to a recording upstream,
// with /form outside the room; global and before go into the global options and
// the top of the site block (to block WebSocket upgrades, say).
type browserSite struct {
	room    string
	options string // waiting_room sub-directives besides name
	global  string
	before  string
}

func (s browserSite) config(up *upstream) string {
	return liveGlobals("\t"+s.global+"\n") + fmt.Sprintf(`
http://localhost:%d {
	%s
	@room not path /form
	waiting_room @room {
		name %s
		%s
	}
	reverse_proxy %s
}
`, livePort, s.before, s.room, s.options, strings.TrimPrefix(up.srv.URL, "http://"))
}

func startBrowserSite(t *testing.T, s browserSite) *upstream {
	t.Helper()
	up := newUpstream(t)
	tester := caddytest.NewTester(t)
	tester.InitServer(s.config(up), "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	return up
}

// chromiumPath finds the browser, or skips the test loudly (fails under CI).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "chromium not found: SKIPPING the real-browser tests of the waiting page " +
		"(apt-get install chromium, or run .ci/run)"
	missingTool(t, msg)
	return ""
}

// tab is one browser tab with the page's reports (see instrument).
type tab struct {
	t   *testing.T
	ctx context.Context
	log *pageLog
}

// newBrowser starts a headless chromium with its own profile and returns its
// first tab, instrumented; extra options go after the harness's.
func newBrowser(t *testing.T, extra ...chromedp.ExecAllocatorOption) *tab {
	t.Helper()
	path := chromiumPath(t)
	profile := t.TempDir() // removed after the browser has exited (cleanups run last-in first-out)
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.UserDataDir(profile),
	)
	opts = append(opts, extra...)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil { // starts the browser, without a deadline
		t.Fatalf("starting chromium: %v", err)
	}
	return instrument(t, ctx)
}

// newTab opens another tab in the same browser context: same cookies, same visitor.
func (b *tab) newTab() *tab {
	b.t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	b.t.Cleanup(cancel)
	return instrument(b.t, ctx)
}

// pageEvent is one report from the page: a watched element's text changed
// (kind "position", "waiting", "eta", "live"), a document loaded ("load", its URL),
// the browser reported a CSP violation ("csp") or a layout shift ("shift": score and
// what moved), the document's title or icon changed ("title", "icon"), the page
// made a Notification ("notification": title | body) or started a tone ("sound":
// its frequency).
type pageEvent struct {
	Doc  string `json:"doc"` // random per document: a new value means a navigation
	Kind string `json:"kind"`
	Text string `json:"text"`
	got  time.Time
}

type pageLog struct {
	mu     sync.Mutex
	events []pageEvent
}

func (l *pageLog) add(e pageEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *pageLog) snapshot() []pageEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// reporter runs in every document the tab loads, before the page's own scripts,
// and reports through the exposed Go func wrReport: Go timestamps each report as
// it arrives, and reports survive the navigation that ends a document.
const reporter = `(function () {
  var doc = Math.random().toString(36).slice(2);
  function report(kind, text) { try { window.wrReport({doc: doc, kind: kind, text: String(text)}); } catch (e) {} }
  document.addEventListener("securitypolicyviolation", function (e) { report("csp", e.violatedDirective + " " + e.blockedURI); });
  // Notifications and tones are passed on to the browser's own, and reported.
  try {
    var N = window.Notification, start = OscillatorNode.prototype.start;
    if (N) {
      var W = function (title, o) { report("notification", title + " | " + (o && o.body)); return new N(title, o); };
      W.prototype = N.prototype;
      W.requestPermission = N.requestPermission.bind(N);
      Object.defineProperty(W, "permission", {get: function () { return N.permission; }});
      window.Notification = W;
    }
    OscillatorNode.prototype.start = function () { report("sound", this.frequency.value); return start.apply(this, arguments); };
  } catch (e) {}
  window.__wrShift = 0;
  try {
    new PerformanceObserver(function (list) {
      list.getEntries().forEach(function (e) {
        if (e.hadRecentInput) return;
        window.__wrShift += e.value;
        report("shift", e.value.toFixed(4) + " " + (e.sources || []).map(function (s) {
          var n = s.node, r = s.previousRect, c = s.currentRect;
          return (n ? (n.id || n.className || n.nodeName) : "?") + " " + [r.x, r.y, r.width, r.height] + " -> " + [c.x, c.y, c.width, c.height];
        }).join("; "));
      });
    }).observe({type: "layout-shift", buffered: true});
  } catch (e) {}
  document.addEventListener("DOMContentLoaded", function () {
    report("load", location.href);
    function iconOf() { var l = document.querySelector("link[rel=icon]"); return l ? l.getAttribute("href") : ""; }
    var title = document.title, icon = iconOf();
    new MutationObserver(function () {
      var h = iconOf();
      if (document.title !== title) report("title", title = document.title);
      if (h !== icon) report("icon", icon = h);
    }).observe(document.head, {subtree: true, childList: true, characterData: true, attributes: true});
    [["position", "wr-position"], ["waiting", "wr-waiting"], ["eta", "wr-eta"], ["live", "wr-live"]].forEach(function (p) {
      var el = document.getElementById(p[1]);
      if (!el) return;
      report(p[0], el.textContent);
      new MutationObserver(function () { report(p[0], el.textContent); })
        .observe(el, {childList: true, characterData: true, subtree: true});
    });
  });
})();`

func instrument(t *testing.T, ctx context.Context) *tab {
	t.Helper()
	b := &tab{t: t, ctx: ctx, log: &pageLog{}}
	err := chromedp.Do(ctx,
		chromedp.ExposeFunc("wrReport", func(_ context.Context, e pageEvent) (chromedp.Void, error) {
			e.got = time.Now()
			b.log.add(e)
			return chromedp.Void{}, nil
		}),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument,
				page.AddScriptToEvaluateOnNewDocumentParams{Source: reporter})
			return err
		}),
	)
	if err != nil {
		t.Fatalf("instrumenting the tab: %v", err)
	}
	return b
}

// do runs actions with the liveness bound.
func (b *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, liveness)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// eval evaluates expression in the page as DevTools would (it works with the
// page's scripts disabled, too).
func eval[T any](b *tab, expression string) T {
	b.t.Helper()
	v, err := tryEval[T](b, expression)
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expression, err)
	}
	return v
}

// tryEval is eval for a page that may be navigating: the error says "not now".
func tryEval[T any](b *tab, expression string) (T, error) {
	ctx, cancel := context.WithTimeout(b.ctx, liveness)
	defer cancel()
	return chromedp.Run(ctx, chromedp.EvaluateAsDevTools[T](expression))
}

// text is the text content of the element with id, "" when there is none.
func (b *tab) text(id string) (string, error) {
	return tryEval[string](b, fmt.Sprintf(`(function(){var e=document.getElementById(%q);return e?e.textContent:""})()`, id))
}

// showing waits until the element with id shows want.
func (b *tab) showing(id, want string) {
	b.t.Helper()
	eventually(b.t, fmt.Sprintf("#%s to show %q", id, want), func() (bool, string) {
		got, err := b.text(id)
		return err == nil && got == want, fmt.Sprintf("%q (%v)", got, err)
	})
}

// landedOn waits until the tab shows the upstream's answer to a GET of uri, at
// that URL.
func (b *tab) landedOn(uri string) {
	b.t.Helper()
	eventually(b.t, "the upstream's page at "+uri, func() (bool, string) {
		got, err := tryEval[[]string](b, `[location.href, document.body ? document.body.innerText : ""]`)
		if err != nil || len(got) != 2 {
			return false, fmt.Sprintf("%q (%v)", got, err)
		}
		return got[0] == liveBase+uri && strings.TrimSpace(got[1]) == "upstream GET "+uri,
			fmt.Sprintf("%s showing %q", got[0], got[1])
	})
}

// enableNetwork turns on the Network domain (for events and extra headers).
func (b *tab) enableNetwork() {
	b.t.Helper()
	b.do(chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, network.Enable, network.EnableParams{})
		return err
	}))
}

// untilReported waits for the first report since index from that satisfies ok.
func (b *tab) untilReported(what string, from int, ok func(pageEvent) bool) (pageEvent, int) {
	b.t.Helper()
	var found pageEvent
	at := -1
	eventually(b.t, what, func() (bool, string) {
		evs := b.log.snapshot()
		for i := from; i < len(evs); i++ {
			if ok(evs[i]) {
				found, at = evs[i], i
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d reports, the last %+v", len(evs), evs[max(len(evs)-3, 0):])
	})
	return found, at
}

// etaShape is every way the English page may state a wait: never a precise count
// of seconds.
var etaShape = regexp.MustCompile(`^(estimating…|less than a minute|about 1 minute|about \d+ minutes|about \d+ hours)$`)

// setHidden minimizes or restores the tab's window. In headless Chromium 156 that is
// what turns document.visibilityState to "hidden" and back, with visibilitychange
// events; a second tab brought to the front (Target.activateTarget) and
// Emulation.setFocusEmulationEnabled leave it "visible".
func (b *tab) setHidden(hidden bool) {
	b.t.Helper()
	state, want := browser.WindowStateNormal, "visible"
	if hidden {
		state, want = browser.WindowStateMinimized, "hidden"
	}
	b.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		w, err := chromedp.CallBrowser(ctx, browser.GetWindowForTarget, browser.GetWindowForTargetParams{TargetID: tg.TargetID})
		if err != nil {
			return err
		}
		_, err = chromedp.CallBrowser(ctx, browser.SetWindowBounds, browser.SetWindowBoundsParams{WindowID: w.WindowID, Bounds: &browser.Bounds{WindowState: state}})
		return err
	}))
	eventually(b.t, "the page to be "+want, func() (bool, string) {
		got, err := tryEval[string](b, `document.visibilityState`)
		return err == nil && got == want, fmt.Sprintf("%q (%v)", got, err)
	})
}

// setLifecycle freezes the page (Page.setWebLifecycleState; Chromium hides it first)
// or lets it run again. A page that ran again is still hidden: setHidden(false)
// after setHidden(true) shows it.
func (b *tab) setLifecycle(state page.SetWebLifecycleStateState) {
	b.t.Helper()
	b.do(chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, page.SetWebLifecycleState, page.SetWebLifecycleStateParams{State: state})
		return err
	}))
}

// setOffline cuts the tab off the network, open sockets included, and tells the page
// (navigator.onLine, the offline and online events); needs enableNetwork. It speaks
// the protocol of the Chromium it finds: the rules and the network state of newer
// ones, and Network.emulateNetworkConditions, which does both, where those are
// refused (Debian's Chromium 148 answers them "Invalid parameters").
func (b *tab) setOffline(off bool) {
	b.t.Helper()
	rules := []*network.Conditions{}
	if off {
		rules = append(rules, &network.Conditions{Offline: true, DownloadThroughput: -1, UploadThroughput: -1})
	}
	b.do(chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{MatchedNetworkConditions: rules})
		if err == nil {
			_, err = chromedp.Call(ctx, network.OverrideNetworkState, network.OverrideNetworkStateParams{Offline: off, DownloadThroughput: -1, UploadThroughput: -1})
		}
		if err == nil {
			return nil
		}
		_, legacyErr := chromedp.Call(ctx, emulateNetworkConditions, legacyNetworkConditions{Offline: off, DownloadThroughput: -1, UploadThroughput: -1})
		if legacyErr != nil {
			return fmt.Errorf("network conditions by rule: %v; the older command: %w", err, legacyErr)
		}
		return nil
	}))
}

// emulateNetworkConditions is the protocol's older command, which cdproto no longer
// lists.
var emulateNetworkConditions = cdp.Command[legacyNetworkConditions, struct{}]{Method: "Network.emulateNetworkConditions"}

type legacyNetworkConditions struct {
	Offline            bool    `json:"offline"`
	Latency            float64 `json:"latency"`
	DownloadThroughput float64 `json:"downloadThroughput"`
	UploadThroughput   float64 `json:"uploadThroughput"`
}

// grantNotifications answers the page's permission request for notifications with
// "granted", as a visitor clicking "Allow" would.
func (b *tab) grantNotifications() {
	b.t.Helper()
	b.do(chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.CallBrowser(ctx, browser.SetPermission, browser.SetPermissionParams{
			Permission: &browser.PermissionDescriptor{Name: "notifications"}, Setting: browser.PermissionSettingGranted, Origin: liveBase})
		return err
	}))
}

// openTab opens another tab of the browser (same profile, same cookies) that the test
// may close, as a visitor closes a tab; the browser's first tab must stay, or the
// browser goes with it.
func (b *tab) openTab() (*tab, func()) {
	b.t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	b.t.Cleanup(cancel)
	return instrument(b.t, ctx), cancel
}

// emulateMedia sets CSS media features, e.g. "prefers-color-scheme", "dark".
func (b *tab) emulateMedia(nameValues ...string) {
	b.t.Helper()
	var features []*emulation.MediaFeature
	for i := 0; i+1 < len(nameValues); i += 2 {
		features = append(features, &emulation.MediaFeature{Name: nameValues[i], Value: nameValues[i+1]})
	}
	b.do(chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: features})
		return err
	}))
}

// acceptLanguage makes the tab's requests ask for lang (needs enableNetwork).
func (b *tab) acceptLanguage(lang string) {
	b.t.Helper()
	b.do(chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders,
			network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Accept-Language": lang}})
		return err
	}))
}

// updateScreenshot rewrites the README's screenshot, examples/waiting-page.png:
//
//	cd caddytest && go test -run TestBrowserPageScreenshots . -update-screenshot
//
// (or WAITING_ROOM_UPDATE_SCREENSHOT=1); the console's and the rehearsal report's
// tests rewrite theirs with it too (examples/console.png, docs/rehearsal.png).
// Every run writes its screenshots to caddytest/artifacts/, which git ignores.
var updateScreenshot = flag.Bool("update-screenshot", false, "rewrite the screenshots in examples/ and docs/ from the browser tests")
