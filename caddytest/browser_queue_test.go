package caddytest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// The seed scenario: capacity 10, twenty people ahead (ten in, ten waiting), the
// browser is number 11, later arrivals do not push it back, each departure ahead
// moves its number down on the open page, and its turn takes it to the URL it
// first asked for.
func TestBrowserSaleScenario(t *testing.T) {
	up := startBrowserSite(t, browserSite{room: uniqueRoom(t), options: "capacity 10"})
	var admitted, ahead []*visitor
	for i := range 20 {
		v := newVisitor(t)
		q, in := v.place("/")
		switch {
		case i < 10 && in:
			admitted = append(admitted, v)
		case i >= 10 && !in && q.Position == i-9:
			ahead = append(ahead, v)
		default:
			t.Fatalf("visitor %d: admitted %v, %+v", i+1, in, q)
		}
	}

	b := newBrowser(t)
	const uri = "/tickets/42?seat=A12&ref=mail"
	b.do(chromedp.Navigate(liveBase + uri))
	b.showing("wr-position", "11")
	b.showing("wr-waiting", "11")
	if got := eval[string](b, `document.querySelector(".pos").textContent`); got != "You are number 11" {
		t.Fatalf("the page says %q", got)
	}
	const marker = "still-the-first-page"
	eval[chromedp.Void](b, `window.__wrMarker = "`+marker+`"`)
	leaveTop := eval[float64](b, `document.getElementById("wr-leave").getBoundingClientRect().top`)
	first, _ := b.untilReported("the page's first report", 0, func(e pageEvent) bool { return e.Kind == "load" })

	// Five arrive after the browser: they queue behind it.
	for i := range 5 {
		if q, in := newVisitor(t).place("/"); in || q.Position != 12+i {
			t.Fatalf("latecomer %d: admitted %v at %d", i+1, in, q.Position)
		}
	}
	b.showing("wr-waiting", "16")
	b.showing("wr-position", "11")

	// One departure a second: five waiters ahead leave, then six buyers check out
	// (the upstream revokes their sessions), each letting in the head of the line.
	type departure struct {
		what, want string
		at         time.Time
	}
	var plan []func() departure
	for i := range 5 {
		plan = append(plan, func() departure {
			ahead[i].leave()
			return departure{fmt.Sprintf("waiter %d leaves", i+1), strconv.Itoa(10 - i), time.Now()}
		})
	}
	for j := range 6 {
		plan = append(plan, func() departure {
			if _, _, body := admitted[j].get("/checkout", ""); body != "upstream GET /checkout" {
				t.Fatalf("checkout answered %q", body)
			}
			want := strconv.Itoa(5 - j)
			if j == 5 {
				want = "admitted"
			}
			return departure{fmt.Sprintf("buyer %d checks out", j+1), want, time.Now()}
		})
	}
	pace := time.NewTicker(time.Second)
	defer pace.Stop()
	seen := len(b.log.snapshot())
	var latencies []string
	var shift float64
	for n, depart := range plan {
		<-pace.C
		if n == len(plan)-1 {
			// Still the page it first loaded: every number above came without a reload.
			if got := eval[string](b, `String(window.__wrMarker)`); got != marker {
				t.Fatalf("the page was reloaded while waiting (marker %q)", got)
			}
			if got := eval[float64](b, `document.getElementById("wr-leave").getBoundingClientRect().top`); got != leaveTop {
				t.Errorf("the leave button moved from y=%v to y=%v as the numbers changed", leaveTop, got)
			}
			shift = eval[float64](b, `window.__wrShift`)
		}
		d := depart()
		var e pageEvent
		if d.want == "admitted" {
			e, seen = b.untilReported("the page to say it is our turn", seen, func(e pageEvent) bool {
				return e.Kind == "live" && strings.HasPrefix(e.Text, "It's your turn")
			})
		} else {
			e, seen = b.untilReported("number "+d.want+" after "+d.what, seen, func(e pageEvent) bool {
				return e.Kind == "position" && e.Text == d.want
			})
		}
		if e.Doc != first.Doc {
			t.Fatalf("%s: the page was reloaded", d.what)
		}
		latencies = append(latencies, fmt.Sprintf("%s -> %s: %v", d.what, d.want, e.got.Sub(d.at).Round(time.Millisecond)))
	}
	b.landedOn(uri)
	t.Logf("departure -> page updated (no reload):\n\t%s", strings.Join(latencies, "\n\t"))
	if got := up.requests(uri); !slices.Equal(got, []string{"GET " + uri}) {
		t.Fatalf("the upstream saw %q for the browser's URL", got)
	}

	// What the page showed, in order, while it waited.
	var positions, announcements []string
	for _, e := range b.log.snapshot() {
		if e.Doc != first.Doc {
			continue
		}
		switch e.Kind {
		case "position":
			if len(positions) == 0 || positions[len(positions)-1] != e.Text {
				positions = append(positions, e.Text)
			}
		case "eta":
			if !etaShape.MatchString(e.Text) {
				t.Errorf("the wait was stated as %q", e.Text)
			}
		case "live":
			if e.Text != "" {
				announcements = append(announcements, e.Text)
			}
		case "shift":
			t.Logf("layout shift: %s", e.Text)
		}
	}
	if want := []string{"11", "10", "9", "8", "7", "6", "5", "4", "3", "2", "1"}; !slices.Equal(positions, want) {
		t.Errorf("the page showed numbers %v, want %v", positions, want)
	}
	// Ten moves in about ten seconds: a screen reader hears a few, not ten.
	if len(announcements) > 4 || announcements[len(announcements)-1] != "It's your turn. Taking you to the site…" {
		t.Errorf("the live region said %q", announcements)
	}
	t.Logf("live region said %q; cumulative layout shift while waiting: %.4f", announcements, shift)
	if shift != 0 {
		t.Errorf("the page's layout shifted as its numbers changed (score %.4f; what moved is logged above)", shift)
	}
}

// Without JavaScript the page's <meta refresh> (inside <noscript>) keeps reloading
// the same URL, which keeps the place and lets the visitor in once a slot frees.
func TestBrowserWithoutJavaScriptRefreshesIntoTheSite(t *testing.T) {
	up := startBrowserSite(t, browserSite{room: uniqueRoom(t), options: "capacity 1\n\t\tqueue_ttl 24s"})
	buyer := newVisitor(t)
	if _, in := buyer.place("/"); !in {
		t.Fatal("first visitor queued")
	}
	b := newBrowser(t)
	b.enableNetwork()
	const uri = "/events/9?day=sat"
	var mu sync.Mutex
	loads := 0
	countLoads(b, uri, &mu, &loads)
	b.do(
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
			return err
		}),
		chromedp.Navigate(liveBase+uri),
	)
	if got := eval[string](b, `document.body.innerText`); !strings.Contains(got, "This page refreshes itself every few seconds.") {
		t.Fatalf("no <noscript> notice without JavaScript: %q", got)
	}
	// It refreshes while still queued and keeps number 1.
	eventually(t, "the page to refresh itself", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return loads >= 3, fmt.Sprintf("%d loads", loads)
	})
	b.showing("wr-position", "1")

	buyer.get("/checkout", "")
	b.landedOn(uri)
	mu.Lock()
	t.Logf("the page loaded %d times without JavaScript before it was let in", loads)
	mu.Unlock()
	if got := up.requests(uri); !slices.Equal(got, []string{"GET " + uri}) {
		t.Fatalf("the upstream saw %q", got)
	}
}

// countLoads counts the document loads of uri in b.
func countLoads(b *tab, uri string, mu *sync.Mutex, n *int) {
	b.t.Helper()
	if err := chromedp.Listen(b.ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok && e.Type == network.ResourceTypeDocument && e.Request.URL == liveBase+uri {
			mu.Lock()
			*n++
			mu.Unlock()
		}
	}); err != nil {
		b.t.Fatal(err)
	}
}

// When the WebSocket cannot be opened (here a proxy in front refuses upgrades),
// the page polls the same URL for JSON: the number still moves, and it still gets
// in.
func TestBrowserPollsWhenWebSocketIsBlocked(t *testing.T) {
	up := startBrowserSite(t, browserSite{
		room:    uniqueRoom(t),
		options: "capacity 1\n\t\tqueue_ttl 24s",
		global:  "order error before waiting_room",
		before:  "@upgrade header Upgrade websocket\n\terror @upgrade \"WebSocket upgrades are blocked here\" 403",
	})
	buyer, second := newVisitor(t), newVisitor(t)
	if _, in := buyer.place("/"); !in {
		t.Fatal("first visitor queued")
	}
	if q, _ := second.place("/"); q.Position != 1 {
		t.Fatalf("second visitor at %d", q.Position)
	}

	b := newBrowser(t)
	b.enableNetwork()
	var mu sync.Mutex
	var sockets, frames, polls int
	var handshakes []int64
	if err := chromedp.Listen(b.ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *network.EventWebSocketCreated:
			sockets++
		case *network.EventWebSocketHandshakeResponseReceived:
			handshakes = append(handshakes, e.Response.Status)
		case *network.EventWebSocketFrameReceived:
			frames++
		case *network.EventRequestWillBeSent:
			if e.Type == network.ResourceTypeFetch {
				polls++
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	const uri = "/drops/3?size=m"
	b.do(chromedp.Navigate(liveBase + uri))
	b.showing("wr-position", "2")
	first, _ := b.untilReported("the page's first report", 0, func(e pageEvent) bool { return e.Kind == "load" })
	eventually(t, "the page to try its WebSocket and start polling", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return sockets >= 1 && polls >= 1, fmt.Sprintf("%d sockets, %d polls", sockets, polls)
	})

	// The buyer checks out: the waiter ahead is let in, and the polling page moves up.
	buyer.get("/checkout", "")
	at := time.Now()
	e, seen := b.untilReported("number 1 by polling", 0, func(e pageEvent) bool { return e.Kind == "position" && e.Text == "1" })
	if e.Doc != first.Doc {
		t.Fatal("the page reloaded instead of polling")
	}
	moved := e.got.Sub(at)

	second.get("/checkout", "")
	at = time.Now()
	b.untilReported("the page to say it is our turn", seen, func(e pageEvent) bool {
		return e.Kind == "live" && strings.HasPrefix(e.Text, "It's your turn")
	})
	admittedAfter := time.Since(at)
	b.landedOn(uri)

	mu.Lock()
	defer mu.Unlock()
	t.Logf("polling: %d WebSocket attempts (handshake statuses %v), %d polls; departure -> number %v, -> admitted %v",
		sockets, handshakes, polls, moved.Round(time.Millisecond), admittedAfter.Round(time.Millisecond))
	if frames != 0 {
		t.Fatalf("the blocked WebSocket received %d frames", frames)
	}
	if got := up.requests(uri); len(got) == 0 || got[len(got)-1] != "GET "+uri || slices.Contains(got, "POST "+uri) {
		t.Fatalf("the upstream saw %q", got)
	}
}

// Two tabs of one browser are one visitor: one cookie, one place in line.
func TestBrowserSecondTabSharesThePlace(t *testing.T) {
	up := startBrowserSite(t, browserSite{room: uniqueRoom(t), options: "capacity 1"})
	buyer := newVisitor(t)
	buyer.place("/")
	ahead := []*visitor{newVisitor(t), newVisitor(t), newVisitor(t)}
	for _, v := range ahead {
		v.place("/")
	}

	const uri = "/tickets?show=late"
	one := newBrowser(t)
	one.do(chromedp.Navigate(liveBase + uri))
	one.showing("wr-position", "4")
	two := one.newTab()
	two.do(chromedp.Navigate(liveBase + uri))
	two.showing("wr-position", "4")

	// Someone arriving after both tabs is number 5, not 6: the second tab took no place.
	if q, _ := newVisitor(t).place("/"); q.Position != 5 {
		t.Fatalf("the visitor after the two tabs is number %d, want 5", q.Position)
	}
	for _, b := range []*tab{one, two} {
		b.showing("wr-waiting", "5")
	}

	// Both tabs follow the same place, and both are let in together.
	for _, v := range ahead {
		v.leave()
	}
	for _, b := range []*tab{one, two} {
		b.showing("wr-position", "1")
	}
	buyer.get("/checkout", "")
	one.landedOn(uri)
	two.landedOn(uri)
	if got := up.requests(uri); !slices.Equal(got, []string{"GET " + uri, "GET " + uri}) {
		t.Fatalf("the upstream saw %q, want one GET per tab", got)
	}
}

// A form POST that lands in the line is never replayed: once admitted, the page
// loads its URL with a GET.
func TestBrowserQueuedPostIsNotReplayed(t *testing.T) {
	up := startBrowserSite(t, browserSite{room: uniqueRoom(t), options: "capacity 1"})
	buyer := newVisitor(t)
	buyer.place("/")

	b := newBrowser(t)
	b.do(
		chromedp.Navigate(liveBase+"/form"),
		chromedp.Click(chromedp.ID("buy")),
	)
	b.showing("wr-position", "1")
	if loc := eval[string](b, `location.href`); loc != liveBase+"/order?item=7" {
		t.Fatalf("the queued POST shows %s", loc)
	}

	buyer.get("/checkout", "")
	b.landedOn("/order?item=7")
	if got := up.requests("/order?item=7"); !slices.Equal(got, []string{"GET /order?item=7"}) {
		t.Fatalf("the upstream saw %q for the queued order, want one GET and no POST", got)
	}
}
