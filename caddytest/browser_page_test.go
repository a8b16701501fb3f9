package caddytest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// controls are the accessible names of the page's visible controls and the live
// regions, from the browser's own accessibility tree; a control without a name
// fails the test.
func (b *tab) controls() (names map[string]string, live []string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, liveness)
	defer cancel()
	tree, err := chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		b.t.Fatalf("reading the accessibility tree: %v", err)
	}
	str := func(v *accessibility.Value) string {
		var s string
		if v == nil || json.Unmarshal(v.Value, &s) != nil {
			return ""
		}
		return s
	}
	names = map[string]string{}
	for _, n := range tree.Nodes {
		if n.Ignored {
			continue
		}
		role := str(n.Role)
		for _, p := range n.Properties {
			if p.Name == "live" && str(p.Value) != "off" {
				live = append(live, role+" "+str(p.Value))
			}
		}
		switch role {
		case "button", "link", "progressbar", "textbox", "checkbox", "combobox", "slider", "menuitem", "tab":
			name := strings.TrimSpace(str(n.Name))
			if name == "" {
				b.t.Errorf("a %s has no accessible name", role)
			}
			names[name] = role
		}
	}
	return names, live
}

// contrast is the WCAG contrast ratio of the text of each selector against the
// first opaque background behind it.
const contrast = `(function (sels) {
  function rgb(s) { var m = s.match(/[\d.]+/g).map(Number); return {r: m[0], g: m[1], b: m[2], a: m.length > 3 ? m[3] : 1}; }
  function lum(c) {
    return [c.r, c.g, c.b].map(function (v) { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); })
      .reduce(function (s, v, i) { return s + v * [0.2126, 0.7152, 0.0722][i]; }, 0);
  }
  var out = {};
  sels.forEach(function (sel) {
    var el = document.querySelector(sel);
    if (!el || !el.offsetParent) return;
    var fg = rgb(getComputedStyle(el).color), bg = null;
    for (var n = el; n && !bg; n = n.parentElement) {
      var c = rgb(getComputedStyle(n).backgroundColor);
      if (c.a === 1) bg = c;
    }
    bg = bg || {r: 255, g: 255, b: 255};
    var a = lum(fg), b = lum(bg);
    out[sel] = Math.round(100 * (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)) / 100;
  });
  return out;
})`

var contrastTargets = `[".room", "h1", ".lead", ".pos span", "#wr-position", "dt", "dd", "#wr-keep", "#wr-away", "#wr-back", "#wr-notify", "#wr-leave", "#wr-confirm-q", "#wr-leave-yes", "#wr-leave-no"]`

// checkContrast measures every target but those hidden in the page's current state
// (which must indeed not be shown).
func (b *tab) checkContrast(scheme string, hidden ...string) {
	b.t.Helper()
	measured := eval[map[string]float64](b, contrast+"("+contrastTargets+")")
	var targets []string
	if err := json.Unmarshal([]byte(contrastTargets), &targets); err != nil {
		b.t.Fatal(err)
	}
	// A target the page does not show is not measured: that must fail, or the check
	// could pass having measured nothing.
	for _, sel := range targets {
		ratio, ok := measured[sel]
		switch {
		case slices.Contains(hidden, sel):
			if ok {
				b.t.Errorf("%s: %s is shown, want it hidden in this state", scheme, sel)
			}
		case !ok:
			b.t.Errorf("%s: %s is not on the page (or not shown): its contrast was not measured", scheme, sel)
		case ratio < 4.5:
			b.t.Errorf("%s: text of %s has contrast %.2f:1, below AA's 4.5:1", scheme, sel, ratio)
		}
	}
}

// The page a queued visitor stares at: every control named, a polite live region,
// its language set, visible keyboard focus, AA contrast in light and dark, reduced
// motion respected, small, nothing loaded from anywhere else, and its one inline
// script allowed by the CSP nonce and nothing else.
func TestBrowserPageIsAccessibleAndSelfContained(t *testing.T) {
	startBrowserSite(t, browserSite{room: uniqueRoom(t), options: "capacity 1"})
	newVisitor(t).place("/")
	newVisitor(t).place("/")

	b := newBrowser(t)
	b.enableNetwork()
	var mu sync.Mutex
	var requests []string
	var csp string
	documents := map[network.RequestID]bool{}
	var pageBytes []float64
	if err := chromedp.Listen(b.ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			requests = append(requests, e.Request.URL)
			if e.Type == network.ResourceTypeDocument {
				documents[e.RequestID] = true
			}
		case *network.EventWebSocketCreated:
			requests = append(requests, e.URL)
		case *network.EventResponseReceived:
			if e.Type == network.ResourceTypeDocument {
				csp, _ = e.Response.Headers["Content-Security-Policy"].(string)
			}
		case *network.EventLoadingFinished:
			if documents[e.RequestID] {
				pageBytes = append(pageBytes, e.EncodedDataLength)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}

	const uri = "/tickets?id=1"
	b.do(chromedp.Navigate(liveBase + uri))
	b.showing("wr-position", "2")
	if lang := eval[string](b, `document.documentElement.lang`); lang != "en" {
		t.Errorf("<html lang=%q>, want en", lang)
	}

	// The inline script runs (it shows the leave button) because its nonce is the
	// header's, and nothing on the page breaks the policy.
	eventually(t, "the page's script to show the leave button", func() (bool, string) {
		return !eval[bool](b, `document.getElementById("wr-leave-box").hidden`), "hidden"
	})
	mu.Lock()
	header := csp
	mu.Unlock()
	m := regexp.MustCompile(`script-src 'nonce-([^']+)'`).FindStringSubmatch(header)
	if m == nil || !strings.Contains(header, "default-src 'none'") {
		t.Fatalf("Content-Security-Policy %q: want default-src 'none' and a script nonce", header)
	}
	nonces := eval[[]string](b, `Array.from(document.querySelectorAll("script:not([type='application/json']), style")).map(function (e) { return e.nonce; })`)
	if len(nonces) != 2 {
		t.Fatalf("the page has %d inline scripts and styles, want 1 of each", len(nonces))
	}
	for _, n := range nonces {
		if n != m[1] {
			t.Errorf("inline nonce %q, header's %q", n, m[1])
		}
	}

	// Controls and the live region, before and after "leave the queue" opens its
	// question; focus moves into the question and back.
	names, live := b.controls()
	if names["Leave the queue"] != "button" || names["Notify me when it's my turn"] != "button" || names["Continue on another device"] != "button" || names["Your progress through the line"] != "progressbar" {
		t.Errorf("controls %v", names)
	}
	if len(live) != 1 || live[0] != "status polite" {
		t.Errorf("live regions %q, want one polite status", live)
	}
	// "Welcome back" shows only on an answer that brought the waiter back.
	question := []string{"#wr-confirm-q", "#wr-leave-yes", "#wr-leave-no", "#wr-back"}
	b.checkContrast("light", question...)
	b.emulateMedia("prefers-color-scheme", "dark")
	b.checkContrast("dark", question...)
	b.emulateMedia()
	b.do(chromedp.Click(chromedp.ID("wr-leave")))
	if got := eval[string](b, `document.activeElement.id`); got != "wr-leave-no" {
		t.Errorf("after \"Leave the queue\" the focus is on #%s, want the safe answer", got)
	}
	names, _ = b.controls()
	if names["Yes, leave"] != "button" || names["Stay in line"] != "button" {
		t.Errorf("controls with the question open %v", names)
	}
	b.checkContrast("light", "#wr-leave", "#wr-back")
	b.emulateMedia("prefers-color-scheme", "dark")
	b.checkContrast("dark", "#wr-leave", "#wr-back")
	b.emulateMedia()
	b.do(chromedp.Click(chromedp.ID("wr-leave-no")))
	if got := eval[string](b, `document.activeElement.id`); got != "wr-leave" {
		t.Errorf("after \"Stay in line\" the focus is on #%s", got)
	}

	// Keyboard focus is visible: Tab from the heading reaches the opt-in to be told,
	// then "Continue on another device", then the leave button.
	eval[chromedp.Void](b, `document.querySelector("#wr-queued h1").focus()`)
	for _, want := range []string{"wr-notify", "wr-handoff", "wr-leave"} {
		b.do(chromedp.KeyEvent(kb.Tab))
		focus := eval[[]string](b, `(function(){var e=document.activeElement,s=getComputedStyle(e);return [e.id,s.outlineStyle,s.outlineWidth]})()`)
		if focus[0] != want || focus[1] == "none" || focus[2] == "0px" {
			t.Errorf("Tab focuses %v (id, outline style, width): want #%s with a visible outline", focus, want)
		}
	}

	// The pulsing dot stops for people who ask for less motion.
	if got := eval[string](b, `getComputedStyle(document.querySelector(".dot")).animationName`); got != "pulse" {
		t.Errorf("the dot's animation is %q", got)
	}
	b.emulateMedia("prefers-reduced-motion", "reduce")
	if got := eval[string](b, `getComputedStyle(document.querySelector(".dot")).animationName`); got != "none" {
		t.Errorf("with reduced motion the dot's animation is %q", got)
	}

	// Korean, for a browser that asks for it: the same visitor, the same place.
	b.acceptLanguage("ko")
	b.do(chromedp.Reload())
	b.showing("wr-position", "2")
	if lang := eval[string](b, `document.documentElement.lang`); lang != "ko" {
		t.Errorf("with Accept-Language: ko, <html lang=%q>", lang)
	}
	names, live = b.controls()
	if names["대기열 나가기"] != "button" || len(live) != 1 {
		t.Errorf("Korean controls %v, live regions %q", names, live)
	}

	for _, e := range b.log.snapshot() {
		if e.Kind == "csp" {
			t.Errorf("CSP violation: %s", e.Text)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, u := range requests {
		if !strings.HasPrefix(u, liveBase+"/") && !strings.HasPrefix(u, "ws://localhost:9080/") && !strings.HasPrefix(u, "data:") {
			t.Errorf("the page made a request to another origin: %s", u)
		}
	}
	if len(pageBytes) < 2 {
		t.Fatalf("saw %d page loads finish", len(pageBytes))
	}
	for _, n := range pageBytes {
		if n >= 15*1024 {
			t.Errorf("the page took %.0f bytes over the wire, want under 15 KiB", n)
		}
	}
	t.Logf("page over the wire (headers and body, en then ko): %v bytes; requests: %q", pageBytes, requests)
}

// The screenshots a person would judge the page by: desktop, phone, dark, Korean.
func TestBrowserPageScreenshots(t *testing.T) {
	startBrowserSite(t, browserSite{room: "spring-sale", options: "capacity 3"})
	for range 3 + 144 {
		newVisitor(t).place("/")
	}
	b := newBrowser(t)
	b.enableNetwork()
	b.emulateMedia("prefers-reduced-motion", "reduce") // a still frame
	b.do(
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(liveBase+"/tickets"),
	)
	for range 60 { // and some behind it, so the bar shows progress
		newVisitor(t).place("/")
	}
	// With three admissions measured over a few seconds the page can estimate.
	eventually(t, "an estimated wait", func() (bool, string) {
		eta, err := b.text("wr-eta")
		return err == nil && eta != "estimating…" && etaShape.MatchString(eta), eta
	})

	dir := "artifacts"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shoot := func(name string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(b.ctx, liveness)
		defer cancel()
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "waiting-page-"+name+".png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", path, len(png))
		if name == "desktop" && (*updateScreenshot || os.Getenv("WAITING_ROOM_UPDATE_SCREENSHOT") != "") {
			if err := os.WriteFile(filepath.Join("..", "examples", "waiting-page.png"), png, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Log("updated examples/waiting-page.png")
		}
	}
	shoot("desktop")
	b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile))
	if w := eval[int](b, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("on a 390 px phone the page is %d px wide: it scrolls sideways", w)
	}
	shoot("mobile")
	b.emulateMedia("prefers-reduced-motion", "reduce", "prefers-color-scheme", "dark")
	shoot("mobile-dark")
	b.do(chromedp.EmulateViewport(1280, 900))
	shoot("dark")
	b.emulateMedia("prefers-reduced-motion", "reduce")
	b.acceptLanguage("ko")
	b.do(chromedp.Reload())
	eventually(t, "the Korean page", func() (bool, string) {
		lang := eval[string](b, `document.documentElement.lang`)
		return lang == "ko", lang
	})
	shoot("ko")
	b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile))
	shoot("ko-mobile")
}
