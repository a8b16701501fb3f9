package caddytest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// WebKit is driven over W3C WebDriver (classic, HTTP and JSON) through Debian's
// WebKitWebDriver, which starts WebKitGTK's MiniBrowser in automation mode. This
// WebKitGTK build refuses the webSocketUrl capability, so BiDi is not on offer, and
// classic WebDriver is a handful of HTTP calls: the client is written here rather than
// taken from a Go WebDriver library, none of which on the module proxy is kept up.
//
// MiniBrowser has no headless mode: it needs an X display, which the harness starts
// (Xvfb) when the environment has none.

type webkitPage struct {
	t      *testing.T
	base   string // the driver's session URL
	client *http.Client
	errs   []string
}

// startXvfb starts a private X server and returns its display, ":N".
func startXvfb(t *testing.T) string {
	t.Helper()
	path := enginePath(t, "webkit", "Xvfb")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	// -displayfd: the server picks a free display and writes its number on fd 3.
	cmd := exec.Command(path, "-displayfd", "3", "-screen", "0", "1280x1024x24", "-nolisten", "tcp")
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting Xvfb: %v", err)
	}
	w.Close()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	got := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(r).ReadString('\n')
		r.Close()
		got <- strings.TrimSpace(line)
	}()
	select {
	case n := <-got:
		if _, err := strconv.Atoi(n); err != nil {
			t.Fatalf("Xvfb gave display %q", n)
		}
		return ":" + n
	case <-time.After(browserStart):
		t.Fatal("Xvfb did not start")
	}
	return ""
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// newWebKit starts WebKitWebDriver and a session in a new MiniBrowser. JavaScript off
// is WebKitSettings' enable-javascript, which MiniBrowser takes as an option; dark
// mode is GTK's dark theme, which WebKitGTK answers prefers-color-scheme with.
func newWebKit(t *testing.T, o engineOptions) enginePage {
	t.Helper()
	path := enginePath(t, "webkit", "WebKitWebDriver")
	display := os.Getenv("DISPLAY")
	if display == "" {
		display = startXvfb(t)
	}
	port := freePort(t)
	cmd := exec.Command(path, "--port="+strconv.Itoa(port))
	cmd.Env = append(os.Environ(), "DISPLAY="+display)
	if o.dark {
		cmd.Env = append(cmd.Env, "GTK_THEME=Adwaita:dark")
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting WebKitWebDriver: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	p := &webkitPage{t: t, client: &http.Client{Timeout: browserStart}}
	driver := fmt.Sprintf("http://127.0.0.1:%d", port)
	args := []string{"--automation"}
	if o.noScripts {
		args = append(args, "--enable-javascript=false")
	}
	caps := map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"acceptInsecureCerts":      true,
		"webkitgtk:browserOptions": map[string]any{"args": args},
	}}}
	var session struct {
		SessionID string `json:"sessionId"`
	}
	var err error
	deadline := time.Now().Add(browserStart)
	for {
		err = p.call(http.MethodPost, driver+"/session", caps, &session)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond) // the driver is still opening its port
	}
	if err != nil {
		t.Fatalf("WebDriver session: %v", err)
	}
	p.base = driver + "/session/" + session.SessionID
	t.Cleanup(func() { p.call(http.MethodDelete, p.base, nil, nil) })
	return p
}

func (p *webkitPage) call(method, url string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return fmt.Errorf("%s %s: %d, %v", method, url, resp.StatusCode, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, r.Value)
	}
	if out != nil {
		return json.Unmarshal(r.Value, out)
	}
	return nil
}

func (p *webkitPage) must(method, path string, body, out any) {
	p.t.Helper()
	if err := p.call(method, p.base+path, body, out); err != nil {
		p.t.Fatalf("webkit: %v", err)
	}
}

func (p *webkitPage) name() string { return "webkit" }

// watchErrors is run in each document the harness loads. Classic WebDriver has no
// console log and runs nothing before a page's own scripts, so WebKit's errors are
// those raised after the page has loaded (every update, the turn, the leave); CSP
// violations come from every engine through the report-uri (see engineSite).
const watchErrors = `if (!window.__wrErrs) {
  window.__wrErrs = [];
  addEventListener("error", function (e) { __wrErrs.push("exception: " + e.message); });
  addEventListener("unhandledrejection", function (e) { __wrErrs.push("rejection: " + e.reason); });
  var ce = console.error;
  console.error = function () { __wrErrs.push("console: " + Array.prototype.join.call(arguments, " ")); return ce.apply(console, arguments); };
}`

func (p *webkitPage) navigate(url string) {
	p.t.Helper()
	p.collect()
	p.must(http.MethodPost, "/url", map[string]any{"url": url}, nil)
	p.call(http.MethodPost, p.base+"/execute/sync", map[string]any{"script": watchErrors, "args": []any{}}, nil)
}

// collect moves the current document's errors into p.errs.
func (p *webkitPage) collect() {
	var errs []string
	if p.call(http.MethodPost, p.base+"/execute/sync", map[string]any{"script": "var e = window.__wrErrs || []; if (window.__wrErrs) window.__wrErrs = []; return e", "args": []any{}}, &errs) == nil {
		p.errs = append(p.errs, errs...)
	}
}

func (p *webkitPage) evalJSON(expression string) (json.RawMessage, error) {
	var s *string
	err := p.call(http.MethodPost, p.base+"/execute/sync", map[string]any{"script": "return JSON.stringify((function(){return " + expression + "})())", "args": []any{}}, &s)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return json.RawMessage("null"), nil
	}
	return json.RawMessage(*s), nil
}

// setHidden minimizes the window (WebKitGTK then makes the page hidden) and restores
// it by giving it its size back.
func (p *webkitPage) setHidden(hidden bool) {
	p.t.Helper()
	if hidden {
		p.must(http.MethodPost, "/window/minimize", map[string]any{}, nil)
		return
	}
	p.must(http.MethodPost, "/window/rect", map[string]any{"width": 1024, "height": 768}, nil)
}

// setViewport sets the window's outer size: classic WebDriver has no other.
func (p *webkitPage) setViewport(width, height int) {
	p.t.Helper()
	p.must(http.MethodPost, "/window/rect", map[string]any{"width": width, "height": height}, nil)
}

func (p *webkitPage) problems() []string {
	p.collect()
	return p.errs
}
