package caddytest

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// noCSPViolations fails the test if the page reported any.
func noCSPViolations(b *tab) {
	b.t.Helper()
	for _, e := range b.log.snapshot() {
		if e.Kind == "csp" {
			b.t.Fatalf("the page broke its Content-Security-Policy: %+v", e)
		}
	}
}

// TestBrowserSolvesTheChallenge: with proof_of_work on, a browser's first visit gets
// the challenge page, which solves it with WebCrypto under the strict CSP and
// continues by itself: the first browser lands on the upstream at the address it
// asked for (the upstream never sees the proof), the second lands in line there.
func TestBrowserSolvesTheChallenge(t *testing.T) {
	up := startBrowserSite(t, browserSite{room: uniqueRoom(t), options: "capacity 1\n\t\tproof_of_work 12"})
	const uri = "/tickets/7?seat=B4"

	first := newBrowser(t)
	first.enableNetwork()
	var mu sync.Mutex
	var asked []string
	if err := chromedp.Listen(first.ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok && e.Type == network.ResourceTypeDocument {
			mu.Lock()
			asked = append(asked, e.Request.URL)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	first.do(chromedp.Navigate(liveBase + uri))
	first.landedOn(uri)
	noCSPViolations(first)
	mu.Lock()
	// The address, the page's continuation with the proof, the 303 back to the address.
	if len(asked) != 3 || asked[0] != liveBase+uri || !strings.HasPrefix(asked[1], liveBase+uri+"&waiting_room_proof=") || asked[2] != liveBase+uri {
		t.Fatalf("the browser asked for %q, want %s, then with its proof, then %s again", asked, uri, uri)
	}
	mu.Unlock()
	if got := up.requests(uri); !slices.Equal(got, []string{"GET " + uri}) {
		t.Fatalf("the upstream saw %q, want one GET of %s without the proof", got, uri)
	}

	second := newBrowser(t)
	second.do(chromedp.Navigate(liveBase + uri))
	second.showing("wr-position", "1")
	if href := eval[string](second, `location.href`); href != liveBase+uri {
		t.Fatalf("the waiting page is at %s, want %s (no proof in the address)", href, liveBase+uri)
	}
	noCSPViolations(second)
}

// TestBrowserChallengeWithoutJavaScript: the challenge page says plainly that it
// needs JavaScript, and nobody gets a place or reaches the upstream.
func TestBrowserChallengeWithoutJavaScript(t *testing.T) {
	up := startBrowserSite(t, browserSite{room: uniqueRoom(t), options: "capacity 5\n\t\tproof_of_work 12"})
	b := newBrowser(t)
	b.do(
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
			return err
		}),
		chromedp.Navigate(liveBase+"/"),
	)
	got := eval[string](b, `document.body.innerText`)
	if !strings.Contains(got, "This check needs JavaScript. Please turn JavaScript on in your browser and reload this page.") {
		t.Fatalf("without JavaScript the page says %q", got)
	}
	if strings.Contains(got, "Working on it") {
		t.Fatalf("without JavaScript the page pretends to work: %q", got)
	}
	if got := up.requests("/"); len(got) != 0 {
		t.Fatalf("the upstream saw %q", got)
	}
}

// TestBrowserChallengeHashRate measures the page's own solver in headless Chromium
// here: hashes per second at full speed and under DevTools' 4x CPU slowdown (what
// Lighthouse takes for a mid-range phone), at a difficulty it never finishes. It
// asserts only that the solver makes progress; the figures go to the log and to
// docs/proof-of-work.md.
func TestBrowserChallengeHashRate(t *testing.T) {
	startBrowserSite(t, browserSite{room: uniqueRoom(t), options: "capacity 5\n\t\tproof_of_work 32"})
	for _, slowdown := range []float64{1, 4} {
		b := newBrowser(t)
		b.do(
			chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
				_, err := chromedp.Call(ctx, emulation.SetCPUThrottlingRate, emulation.SetCPUThrottlingRateParams{Rate: slowdown})
				return err
			}),
			// Not chromedp.Navigate, which waits for the load event: see below.
			chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
				_, err := chromedp.Call(ctx, page.Navigate, page.NavigateParams{URL: liveBase + "/"})
				return err
			}),
		)
		tried := func() (float64, time.Time) {
			n, _ := tryEval[float64](b, `(function(){var e=document.getElementById("wr-challenge");return e?+(e.getAttribute("data-tried")||0):0})()`)
			return n, time.Now()
		}
		eventually(t, "the solver to start", func() (bool, string) {
			n, _ := tried()
			return n > 0, ""
		})
		n0, t0 := tried()
		time.Sleep(4 * time.Second)
		n1, t1 := tried()
		if n1 <= n0 {
			t.Fatalf("slowdown %vx: the solver made no progress (%v then %v hashes)", slowdown, n0, n1)
		}
		rate := (n1 - n0) / t1.Sub(t0).Seconds()
		t.Logf("Chromium, CPU slowdown %vx: %.0f hashes/s; 2^16 hashes take %.0f ms, 2^20 %.1f s", slowdown, rate,
			65536/rate*1000, 1048576/rate)
		noCSPViolations(b)
	}
}
