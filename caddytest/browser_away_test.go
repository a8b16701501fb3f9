package caddytest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// A place that survives real life: a tab closed and opened again, a phone asleep and
// off the network, a turn that comes while nobody looks. The room forgets no waiter
// for away_ttl; queue_ttl is short so that each gap is several of it.
const (
	awayQueueTTL = 5 * time.Second
	awayOptions  = "capacity 1\n\t\tqueue_ttl 5s\n\t\taway_ttl 1m"
	welcomeBack  = "Welcome back — you kept your place."
)

// awayGap is how long each test keeps the browser quiet: several queue_ttl, well
// within away_ttl.
const awayGap = 3 * awayQueueTTL

// watcher is a later waiter holding the waiting page's WebSocket, so the room hears
// from it all along; it records every position it is told.
type watcher struct {
	t *testing.T

	mu        sync.Mutex
	positions []int
	messages  int
	err       error
}

func watch(t *testing.T, v *visitor, path string) *watcher {
	t.Helper()
	c := v.socket(path)
	w := &watcher{t: t}
	go func() {
		for {
			_, data, err := c.Read(context.Background())
			w.mu.Lock()
			if err != nil {
				w.err = err
				w.mu.Unlock()
				return
			}
			w.messages++
			var m queueAnswer
			if json.Unmarshal(data, &m) == nil && m.Type == "position" {
				w.positions = append(w.positions, m.Position)
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// told waits until the latest position the watcher was told is want.
func (w *watcher) told(want int, why string) {
	w.t.Helper()
	eventually(w.t, fmt.Sprintf("the later waiter to be told number %d (%s)", want, why), func() (bool, string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.err != nil {
			w.t.Fatalf("the later waiter's socket failed after %d messages: %v", w.messages, w.err)
		}
		n := len(w.positions)
		return n > 0 && w.positions[n-1] == want, fmt.Sprintf("%d messages, positions %v", w.messages, w.positions[max(n-5, 0):])
	})
}

// awaySite is a room of one slot, held by an admitted visitor who never leaves, so a
// browser that joins waits at number 1 for as long as the test likes.
func awaySite(t *testing.T, options string) (*upstream, *visitor) {
	t.Helper()
	up := startBrowserSite(t, browserSite{room: uniqueRoom(t), options: options})
	holder := newVisitor(t)
	if _, in := holder.place("/"); !in {
		t.Fatal("the first visitor was queued")
	}
	return up, holder
}

// A tab closed for several queue_ttl and opened again in the same browser is back at
// its place, ahead of a waiter who arrived after it and stayed all along, and says
// so. While it is gone it holds nobody up: the later waiter is number 1.
func TestBrowserClosedTabKeepsItsPlace(t *testing.T) {
	awaySite(t, awayOptions)
	b := newBrowser(t) // stays on about:blank: the browser ends with its first tab
	const uri = "/tickets/12?section=b"
	one, closeOne := b.openTab()
	one.do(chromedp.Navigate(liveBase + uri))
	one.showing("wr-position", "1")
	if got := eval[string](one, `document.getElementById("wr-away").textContent`); !strings.Contains(got, "your place is kept for 60 seconds") {
		t.Errorf("the page tells %q about a closed tab", got)
	}
	later := watch(t, newVisitor(t), "/")
	later.told(2, "behind the browser")

	closeOne()
	closedAt := time.Now()
	later.told(1, "the closed tab's waiter is away")
	time.Sleep(time.Until(closedAt.Add(awayGap)))

	two := b.newTab()
	two.do(chromedp.Navigate(liveBase + uri))
	two.showing("wr-position", "1")
	two.showing("wr-back", welcomeBack)
	if hidden := eval[bool](two, `document.getElementById("wr-back").hidden`); hidden {
		t.Error("the welcome back is there but hidden")
	}
	two.untilReported("the live region to say welcome back", 0, func(e pageEvent) bool { return e.Kind == "live" && e.Text == welcomeBack })
	later.told(2, "the browser is back ahead of it")
	t.Logf("closed for %v (queue_ttl %v): back at number 1, the later waiter told %v", time.Since(closedAt).Round(100*time.Millisecond), awayQueueTTL, later.positions)
}

// A page frozen and off the network for several queue_ttl (a phone in a pocket)
// keeps its place when it runs again, and says welcome back, without a reload. It
// closes its WebSocket as it is frozen: the server would go on writing into a socket
// nobody reads, and the page would never be away.
func TestBrowserFrozenOfflinePageKeepsItsPlace(t *testing.T) {
	awaySite(t, awayOptions)
	b := newBrowser(t)
	b.enableNetwork()
	const uri = "/drops/5?colour=red"
	b.do(chromedp.Navigate(liveBase + uri))
	b.showing("wr-position", "1")
	first, _ := b.untilReported("the page's first report", 0, func(e pageEvent) bool { return e.Kind == "load" })
	later := watch(t, newVisitor(t), "/")
	later.told(2, "behind the browser")
	b.showing("wr-waiting", "2")

	b.setOffline(true)
	b.setLifecycle(page.SetWebLifecycleStateStateFrozen)
	frozenAt := time.Now()
	later.told(1, "the frozen page's waiter is away")
	time.Sleep(time.Until(frozenAt.Add(awayGap)))
	seen := len(b.log.snapshot())

	// It wakes before the network is back, as a phone does.
	b.setLifecycle(page.SetWebLifecycleStateStateActive)
	b.setOffline(false)
	b.setHidden(true)
	b.setHidden(false)
	e, _ := b.untilReported("the page to say welcome back", seen, func(e pageEvent) bool { return e.Kind == "live" && e.Text == welcomeBack })
	if e.Doc != first.Doc {
		t.Fatal("the page was reloaded")
	}
	b.showing("wr-back", welcomeBack)
	b.showing("wr-position", "1")
	b.showing("wr-waiting", "2")
	later.told(2, "the browser is back ahead of it")
	t.Logf("frozen and offline for %v (queue_ttl %v): back at number 1, the later waiter told %v", time.Since(frozenAt).Round(100*time.Millisecond), awayQueueTTL, later.positions)
}

// A visitor who asked to be told, whose turn comes while the tab is hidden: the tab's
// title and icon say so, a notification and a tone go out, and the tab goes to the
// URL it was opened at while still hidden, with one GET.
func TestBrowserTurnWhileHiddenIsTold(t *testing.T) {
	up, holder := awaySite(t, "capacity 1")
	b := newBrowser(t)
	b.grantNotifications()
	const uri = "/tickets/7?row=c"
	b.do(chromedp.Navigate(liveBase + uri))
	b.showing("wr-position", "1")
	room := eval[string](b, `JSON.parse(document.getElementById("wr-state").textContent).room`)
	b.do(chromedp.Click(chromedp.ID("wr-notify")))
	b.showing("wr-alert", "You'll get a notification and a sound when it's your turn.")
	first, _ := b.untilReported("the page's first report", 0, func(e pageEvent) bool { return e.Kind == "load" })
	b.setHidden(true)
	seen := len(b.log.snapshot())

	holder.get("/checkout", "")
	want := map[string]string{
		"title":        "It's your turn! · " + room,
		"notification": "It's your turn! | It's your turn. Taking you to the site…",
		"sound":        "880",
	}
	for kind, text := range want {
		e, _ := b.untilReported(kind+" "+text, seen, func(e pageEvent) bool { return e.Kind == kind && e.Text == text })
		if e.Doc != first.Doc {
			t.Fatalf("%s came from another document", kind)
		}
	}
	b.untilReported("the icon to change", seen, func(e pageEvent) bool {
		return e.Kind == "icon" && e.Doc == first.Doc && strings.HasPrefix(e.Text, "data:image/svg+xml,")
	})
	// Chromium lets a hidden tab navigate: the site is asked for before the tab shows.
	eventually(t, "the hidden tab to ask the site for "+uri, func() (bool, string) {
		got := up.requests(uri)
		return len(got) > 0, fmt.Sprintf("%q", got)
	})
	b.setHidden(false)
	b.landedOn(uri)
	if got := up.requests(uri); !slices.Equal(got, []string{"GET " + uri}) {
		t.Fatalf("the upstream saw %q", got)
	}
}
