package caddytest

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/caddyserver/caddy/v2/caddytest"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The engines a visitor's browser is built on: Chromium (over the DevTools protocol,
// the harness in harness_browser_test.go), Firefox (WebDriver BiDi,
// harness_firefox_test.go) and WebKit (W3C WebDriver, harness_webdriver_test.go). The
// engine tests drive each through enginePage, the few things every one of the three
// protocols can do; what only Chromium can do stays in the Chromium tests.

// enginePage is one tab of one engine. Its methods fail the test on a protocol error,
// except evalJSON, which a test polls while the page navigates.
type enginePage interface {
	name() string
	// navigate loads url and returns once it has loaded.
	navigate(url string)
	// evalJSON evaluates a JavaScript expression in the page and returns its value
	// as JSON.
	evalJSON(expression string) (json.RawMessage, error)
	// setHidden hides the tab from the visitor (document.visibilityState "hidden"),
	// or shows it again.
	setHidden(hidden bool)
	// setViewport sizes the page's window (a phone's, a laptop's) in CSS pixels.
	setViewport(width, height int)
	// problems are the console errors and uncaught exceptions the engine reported.
	problems() []string
}

// engineOptions are how an engine starts: with JavaScript off, in dark mode
// (prefers-color-scheme: dark).
type engineOptions struct {
	noScripts, dark bool
}

// engines are the three, by the name the tests use.
var engines = []struct {
	name  string
	start func(t *testing.T, o engineOptions) enginePage
}{
	{"chromium", newChromium},
	{"firefox", newFirefox},
	{"webkit", newWebKit},
}

// enginePath finds the first of names on PATH, or skips the test loudly (fails under CI).
func enginePath(t *testing.T, engine string, names ...string) string {
	t.Helper()
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("%s not found: SKIPPING the %s engine tests (run .ci/run, which installs it)", strings.Join(names, " or "), engine)
	missingTool(t, msg)
	return ""
}

// engineEval evaluates expression in p as a T.
func engineEval[T any](t *testing.T, p enginePage, expression string) T {
	t.Helper()
	var v T
	raw, err := p.evalJSON(expression)
	if err == nil {
		err = json.Unmarshal(raw, &v)
	}
	if err != nil {
		t.Fatalf("%s: evaluating %s: %v", p.name(), expression, err)
	}
	return v
}

// engineShowing waits until the element with id shows want.
func engineShowing(t *testing.T, p enginePage, id, want string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s: #%s to show %q", p.name(), id, want), func() (bool, string) {
		raw, err := p.evalJSON(fmt.Sprintf(`(function(){var e=document.getElementById(%q);return e?e.textContent:""})()`, id))
		return err == nil && string(raw) == fmt.Sprintf("%q", want), fmt.Sprintf("%s (%v)", raw, err)
	})
}

// engineLandedOn waits until p shows the upstream's answer to a GET of base+uri.
func engineLandedOn(t *testing.T, p enginePage, base, uri string) {
	t.Helper()
	eventually(t, p.name()+": the upstream's page at "+uri, func() (bool, string) {
		var got []string
		raw, err := p.evalJSON(`[location.href, document.body ? document.body.innerText : ""]`)
		if err == nil {
			err = json.Unmarshal(raw, &got)
		}
		if err != nil || len(got) != 2 {
			return false, fmt.Sprintf("%s (%v)", raw, err)
		}
		return got[0] == base+uri && strings.TrimSpace(got[1]) == "upstream GET "+uri,
			fmt.Sprintf("%s showing %q", got[0], got[1])
	})
}

// chromiumPage is the Chromium harness's tab seen as an enginePage.
type chromiumPage struct {
	b *tab

	mu   sync.Mutex
	errs []string
}

// newChromium starts a headless chromium that takes Caddy's locally issued
// certificate (as the other engines do with acceptInsecureCerts).
func newChromium(t *testing.T, o engineOptions) enginePage {
	t.Helper()
	c := &chromiumPage{b: newBrowser(t, chromedp.Flag("ignore-certificate-errors", true))}
	add := func(s string) {
		c.mu.Lock()
		c.errs = append(c.errs, s)
		c.mu.Unlock()
	}
	if err := chromedp.Listen(c.b.ctx, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			text := e.ExceptionDetails.Text
			if x := e.ExceptionDetails.Exception; x != nil {
				text += " " + x.Description
			}
			add("exception: " + text)
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				b, _ := json.Marshal(e.Args)
				add("console: " + string(b))
			}
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError {
				add(string(e.Entry.Source) + ": " + e.Entry.Text)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	c.b.do(chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		if _, err := chromedp.Call(ctx, runtime.Enable, cdp.Empty{}); err != nil {
			return err
		}
		if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
			return err
		}
		if o.dark {
			if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
				return err
			}
		}
		if !o.noScripts {
			return nil
		}
		_, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
		return err
	}))
	return c
}

func (c *chromiumPage) name() string { return "chromium" }

func (c *chromiumPage) navigate(url string) {
	c.b.t.Helper()
	c.b.do(chromedp.Navigate(url))
}

func (c *chromiumPage) evalJSON(expression string) (json.RawMessage, error) {
	s, err := tryEval[string](c.b, "JSON.stringify((function(){return "+expression+"})())")
	if err != nil {
		return nil, err
	}
	return json.RawMessage(s), nil
}

func (c *chromiumPage) setHidden(hidden bool) {
	c.b.t.Helper()
	c.b.setHidden(hidden)
}

func (c *chromiumPage) setViewport(width, height int) {
	c.b.t.Helper()
	c.b.do(chromedp.EmulateViewport(int64(width), int64(height)))
}

// screenshot writes the whole page to caddytest/artifacts/name (which git ignores),
// for a person to look at.
func (c *chromiumPage) screenshot(name string) {
	c.b.t.Helper()
	ctx, cancel := context.WithTimeout(c.b.ctx, liveness)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err == nil {
		if err = os.MkdirAll("artifacts", 0o755); err == nil {
			err = os.WriteFile(filepath.Join("artifacts", name), png, 0o644)
		}
	}
	if err != nil {
		c.b.t.Fatal(err)
	}
}

func (c *chromiumPage) problems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.errs...)
}

// engineSite is browserSite served over HTTP and HTTPS (Caddy's local CA) at once,
// one room behind both, with the room's Content-Security-Policy given a report-uri:
// every engine posts its violations there, and the upstream keeps them.
func startEngineSite(t *testing.T, room, options string) (*upstream, *cspReports) {
	t.Helper()
	up := newUpstream(t)
	reports := &cspReports{}
	reports.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		reports.mu.Lock()
		reports.got = append(reports.got, string(b))
		reports.mu.Unlock()
	}))
	t.Cleanup(reports.srv.Close)
	tester := caddytest.NewTester(t)
	tester.InitServer(liveGlobals("")+fmt.Sprintf(`
http://localhost:%d, https://localhost:9443 {
	header >Content-Security-Policy "^(.+)$" "${1}; report-uri /csp-report"
	handle /csp-report {
		reverse_proxy %s
	}
	@room not path /form /csp-report
	waiting_room @room {
		name %s
		%s
	}
	reverse_proxy %s
}
`, livePort, strings.TrimPrefix(reports.srv.URL, "http://"), room, options, strings.TrimPrefix(up.srv.URL, "http://")), "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	// Caddy issues the site's certificate as it starts; a browser that comes first
	// meets a failed handshake.
	tlsClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer tlsClient.CloseIdleConnections()
	eventually(t, "the HTTPS site to answer", func() (bool, string) {
		resp, err := tlsClient.Get(liveTLSBase + "/form")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return true, ""
	})
	return up, reports
}

const liveTLSBase = "https://localhost:9443"

// cspReports are the bodies the engines posted to the report-uri.
type cspReports struct {
	srv *httptest.Server

	mu  sync.Mutex
	got []string
}

func (r *cspReports) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}
