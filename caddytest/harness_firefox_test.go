package caddytest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Firefox is driven over WebDriver BiDi, which Debian's firefox-esr speaks itself when
// started with --remote-debugging-port: no geckodriver (which Debian does not package)
// stands between. The client is the few commands the engine tests use, written here:
// the Go module proxy holds no maintained BiDi client (the Go WebDriver libraries speak
// classic WebDriver only, through geckodriver), and a BiDi command is one JSON message
// on a WebSocket, which coder/websocket (already the tests' client) carries.

// bidiListening is the line firefox prints once its BiDi server is up.
var bidiListening = regexp.MustCompile(`WebDriver BiDi listening on (ws://\S+)`)

// firefoxPrefs are written into the fresh profile's user.js: a test browser that asks
// nothing of the network but the site under test.
const firefoxPrefs = `user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);
user_pref("app.update.auto", false);
user_pref("browser.aboutwelcome.enabled", false);
user_pref("network.captive-portal-service.enabled", false);
user_pref("browser.safebrowsing.update.enabled", false);
`

type firefoxPage struct {
	t    *testing.T
	conn *websocket.Conn
	ctx  string // the browsing context (tab) under test

	nextID  atomic.Int64
	mu      sync.Mutex
	waiting map[int64]chan bidiReply
	errs    []string
	other   string // the tab in front while the one under test is hidden
}

type bidiReply struct {
	Type    string          `json:"type"`
	ID      int64           `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   string          `json:"error"`
	Message string          `json:"message"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// newFirefox starts a headless firefox-esr with its own profile. JavaScript off and
// dark mode are prefs of the profile: this ESR's BiDi sets neither per tab.
func newFirefox(t *testing.T, o engineOptions) enginePage {
	t.Helper()
	path := enginePath(t, "firefox", "firefox-esr", "firefox")
	profile := t.TempDir()
	prefs := firefoxPrefs
	if o.noScripts {
		prefs += "user_pref(\"javascript.enabled\", false);\n"
	}
	if o.dark {
		prefs += "user_pref(\"layout.css.prefers-color-scheme.content-override\", 0);\n"
	}
	if err := os.WriteFile(filepath.Join(profile, "user.js"), []byte(prefs), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, "--headless", "--no-remote", "--profile", profile, "--remote-debugging-port", "0", "about:blank")
	cmd.Env = append(os.Environ(), "MOZ_CRASHREPORTER_DISABLE=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting firefox: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := bidiListening.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	var wsURL string
	select {
	case wsURL = <-found:
	case <-time.After(browserStart):
		t.Fatal("firefox did not open its BiDi port")
	}
	ctx, cancel := context.WithTimeout(context.Background(), browserStart)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, wsURL+"/session", nil)
	if err != nil {
		t.Fatalf("connecting to firefox's BiDi: %v", err)
	}
	conn.SetReadLimit(64 << 20)
	f := &firefoxPage{t: t, conn: conn, waiting: map[int64]chan bidiReply{}}
	go f.read()
	t.Cleanup(func() { conn.CloseNow() })

	if _, err := f.callWithin(browserStart, "session.new", map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{"acceptInsecureCerts": true}}}); err != nil {
		t.Fatalf("BiDi session: %v", err)
	}
	var tree struct {
		Contexts []struct {
			Context string `json:"context"`
		} `json:"contexts"`
	}
	f.must("browsingContext.getTree", map[string]any{}, &tree)
	if len(tree.Contexts) == 0 {
		t.Fatal("firefox has no tab")
	}
	f.ctx = tree.Contexts[0].Context
	f.must("session.subscribe", map[string]any{"events": []string{"log.entryAdded"}}, nil)
	return f
}

func (f *firefoxPage) read() {
	for {
		_, data, err := f.conn.Read(context.Background())
		if err != nil {
			f.mu.Lock()
			for id, ch := range f.waiting {
				ch <- bidiReply{Type: "error", Error: "connection lost", Message: err.Error()}
				delete(f.waiting, id)
			}
			f.mu.Unlock()
			return
		}
		var r bidiReply
		if json.Unmarshal(data, &r) != nil {
			continue
		}
		if r.Type == "event" {
			f.event(r)
			continue
		}
		f.mu.Lock()
		ch := f.waiting[r.ID]
		delete(f.waiting, r.ID)
		f.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
}

// event keeps the log entries that fail a test: an error logged by the page's
// console, an uncaught exception, and the CSP violations Firefox logs as errors.
func (f *firefoxPage) event(r bidiReply) {
	if r.Method != "log.entryAdded" {
		return
	}
	var e struct {
		Level string `json:"level"`
		Type  string `json:"type"`
		Text  string `json:"text"`
	}
	if json.Unmarshal(r.Params, &e) == nil && e.Level == "error" {
		f.mu.Lock()
		f.errs = append(f.errs, e.Type+": "+e.Text)
		f.mu.Unlock()
	}
}

func (f *firefoxPage) call(method string, params any) (json.RawMessage, error) {
	return f.callWithin(liveness, method, params)
}

func (f *firefoxPage) callWithin(bound time.Duration, method string, params any) (json.RawMessage, error) {
	id := f.nextID.Add(1)
	ch := make(chan bidiReply, 1)
	f.mu.Lock()
	f.waiting[id] = ch
	f.mu.Unlock()
	msg, _ := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := f.conn.Write(ctx, websocket.MessageText, msg); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if r.Type == "error" {
			return nil, fmt.Errorf("%s: %s: %s", method, r.Error, r.Message)
		}
		return r.Result, nil
	case <-ctx.Done():
		f.mu.Lock()
		delete(f.waiting, id)
		f.mu.Unlock()
		return nil, fmt.Errorf("%s: no answer within %v", method, bound)
	}
}

func (f *firefoxPage) must(method string, params, out any) {
	f.t.Helper()
	res, err := f.call(method, params)
	if err == nil && out != nil {
		err = json.Unmarshal(res, out)
	}
	if err != nil {
		f.t.Fatalf("firefox: %v", err)
	}
}

func (f *firefoxPage) name() string { return "firefox" }

func (f *firefoxPage) navigate(url string) {
	f.t.Helper()
	f.must("browsingContext.navigate", map[string]any{"context": f.ctx, "url": url, "wait": "complete"}, nil)
}

func (f *firefoxPage) evalJSON(expression string) (json.RawMessage, error) {
	// The value comes back as BiDi's typed remote value; JSON.stringify in the page
	// makes it plain JSON again.
	res, err := f.call("script.evaluate", map[string]any{
		"expression":   "JSON.stringify((function(){return " + expression + "})())",
		"target":       map[string]any{"context": f.ctx},
		"awaitPromise": false,
		// As a visitor's click would be: Firefox asks for notifications only then.
		"userActivation": true,
	})
	if err != nil {
		return nil, err
	}
	var r struct {
		Type             string `json:"type"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
		Result struct {
			Type  string `json:"type"`
			Value string `json:"value"`
		} `json:"result"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return nil, err
	}
	if r.ExceptionDetails != nil {
		return nil, fmt.Errorf("%s: %s", expression, r.ExceptionDetails.Text)
	}
	if r.Result.Type != "string" {
		return json.RawMessage("null"), nil
	}
	return json.RawMessage(r.Result.Value), nil
}

// setHidden hides the tab the way a visitor does, by bringing another tab to the
// front: headless Firefox makes a background tab hidden. No BiDi command of this ESR
// minimizes a window.
func (f *firefoxPage) setHidden(hidden bool) {
	f.t.Helper()
	if hidden {
		var other struct {
			Context string `json:"context"`
		}
		f.must("browsingContext.create", map[string]any{"type": "tab"}, &other)
		f.must("browsingContext.activate", map[string]any{"context": other.Context}, nil)
		f.mu.Lock()
		f.other = other.Context
		f.mu.Unlock()
		return
	}
	f.must("browsingContext.activate", map[string]any{"context": f.ctx}, nil)
	f.mu.Lock()
	other := f.other
	f.other = ""
	f.mu.Unlock()
	if other != "" {
		f.must("browsingContext.close", map[string]any{"context": other}, nil)
	}
}

func (f *firefoxPage) setViewport(width, height int) {
	f.t.Helper()
	f.must("browsingContext.setViewport", map[string]any{"context": f.ctx, "viewport": map[string]any{"width": width, "height": height}}, nil)
}

func (f *firefoxPage) problems() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.errs...)
}
