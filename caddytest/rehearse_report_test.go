package caddytest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// The rehearsal's report, as `caddy waiting-room rehearse` writes it, opens in
// Chromium from its file with no console error and no request beyond the file
// itself, and axe-core finds nothing against WCAG 2.2 A and AA in it. The sale has
// everything the report draws: a line that forms and clears, give-ups, sleeping
// phones, no-shows, a shop that slows, and three settings compared, one adapting
// its capacity to the shop.
//
//	cd caddytest && go test -run TestRehearsalReportInChromium . -update-screenshot
//
// rewrites docs/rehearsal.png, two of the report's charts as the manual shows them.
func TestRehearsalReportInChromium(t *testing.T) {
	axeSource, err := os.ReadFile(filepath.Join("testdata", "axe", "axe.min.js"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	caddyfile := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(caddyfile, []byte(":8080 {\n\twaiting_room {\n\t\tname drop\n\t\tcapacity 600\n\t}\n\trespond \"the shop\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "report")
	cmd := exec.Command(caddyBinary(t), "waiting-room", "rehearse", "--config", caddyfile, "--out", out, "--seed", "44",
		"--arrivals", "4000 over 5m, 2000 over 10m", "--stay", "3m ± 1m", "--checkout", "50%",
		"--give-up", "15% after 5m, 15% after 10m", "--sleep", "5% for 2m ± 1m", "--no-shows", "1%",
		"--clicks", "every 20s, 6 requests", "--shop", "200 at once, 150ms; 200 at once, 250ms from 15m",
		"--compare", `{"capacity": 1200}`, "--compare", `{"adapt": {"latency": "400ms", "min": 100, "max": 3000}}`)
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("caddy waiting-room rehearse: %v\n%s", err, msg)
	}
	page := "file://" + filepath.Join(out, "report.html")

	p := newChromium(t, engineOptions{}).(*chromiumPage)
	var mu sync.Mutex
	var requests []string
	chromedp.Listen(p.b.ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			requests = append(requests, e.Request.URL)
			mu.Unlock()
		}
	})
	p.b.do(chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, network.Enable, network.EnableParams{})
		return err
	}))
	p.setViewport(1280, 900)
	p.navigate(page)

	if got := engineEval[int](t, p, `document.querySelectorAll("svg[role=img] title").length`); got < 9 {
		t.Errorf("the report draws %d charts, want the nine of a sale with a shop", got)
	}
	checkAxe(t, p, string(axeSource), "the rehearsal's report")
	for _, problem := range p.problems() {
		t.Errorf("the report: %s", problem)
	}
	mu.Lock()
	for _, u := range requests {
		if u != page {
			t.Errorf("the report asked the network for %s", u)
		}
	}
	if len(requests) == 0 {
		t.Error("no request seen at all, not even the report's own: the network is not watched")
	}
	mu.Unlock()

	// The screenshot is the charts of the people waiting and of their wait, as a
	// laptop shows them; the whole page goes to artifacts/ for a person to look at.
	p.screenshot("rehearsal-full.png")
	p.setViewport(1100, 1040)
	engineEval[bool](t, p, `(function(){document.getElementById("waiting").scrollIntoView();return true})()`)
	ctx, cancel := context.WithTimeout(p.b.ctx, liveness)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err == nil {
		err = os.WriteFile(filepath.Join("artifacts", "rehearsal.png"), png, 0o644)
	}
	if err == nil && (*updateScreenshot || os.Getenv("WAITING_ROOM_UPDATE_SCREENSHOT") != "") {
		err = os.WriteFile(filepath.Join("..", "docs", "rehearsal.png"), png, 0o644)
		t.Log("updated docs/rehearsal.png")
	}
	if err != nil {
		t.Fatal(err)
	}
}
