package caddytest

import (
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// socketLog is what a tab's WebSockets and polls did, from the browser's network
// events.
type socketLog struct {
	mu      sync.Mutex
	created int             // sockets the page opened
	opened  int             // handshakes answered 101
	frames  map[string]int  // frames received, per socket
	order   []string        // sockets, as created
	polls   map[string]bool // the page's fetches, and whether each has ended
}

func listenSockets(b *tab) *socketLog {
	b.t.Helper()
	l := &socketLog{frames: map[string]int{}, polls: map[string]bool{}}
	b.enableNetwork()
	if err := chromedp.Listen(b.ctx, func(ev any) {
		l.mu.Lock()
		defer l.mu.Unlock()
		switch e := ev.(type) {
		case *network.EventWebSocketCreated:
			l.created++
			l.order = append(l.order, string(e.RequestID))
		case *network.EventWebSocketHandshakeResponseReceived:
			if e.Response.Status == 101 {
				l.opened++
			}
		case *network.EventWebSocketFrameReceived:
			l.frames[string(e.RequestID)]++
		case *network.EventRequestWillBeSent:
			if e.Type == network.ResourceTypeFetch {
				l.polls[string(e.RequestID)] = false
			}
		case *network.EventLoadingFinished:
			if _, ok := l.polls[string(e.RequestID)]; ok {
				l.polls[string(e.RequestID)] = true
			}
		case *network.EventLoadingFailed:
			if _, ok := l.polls[string(e.RequestID)]; ok {
				l.polls[string(e.RequestID)] = true
			}
		}
	}); err != nil {
		b.t.Fatal(err)
	}
	return l
}

// counts is how many sockets were created and opened, and whether the newest one
// received a frame.
func (l *socketLog) counts() (created, opened int, heard bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.order); n > 0 {
		heard = l.frames[l.order[n-1]] > 0
	}
	return l.created, l.opened, heard
}

// polled is how many of the page's polls have ended, answered or failed.
func (l *socketLog) polled() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ended := range l.polls {
		if ended {
			n++
		}
	}
	return n
}

// The waiting page rides through a restart of the real Caddy process (SIGTERM, or
// SIGKILL; the memory store kept on disk, a generated secret): while the instance is
// down, the page goes on showing its number, in the same document, and tries its
// socket and its poll again; when the instance is back, the page opens a new socket
// on its own, is told the same number, and is let in in its turn, after the two
// waiters ahead of it. The page reaches Caddy directly, and through a proxy in front
// (a load balancer, a container platform's ingress), which answers 502 while Caddy
// is down.
func TestBrowserPageRidesThroughRestart(t *testing.T) {
	t.Run("direct", func(t *testing.T) { ridesThroughRestart(t, false, false) })
	t.Run("behind a proxy", func(t *testing.T) { ridesThroughRestart(t, true, false) })
	t.Run("killed", func(t *testing.T) { ridesThroughRestart(t, false, true) })
}

// ridesThroughRestart runs the test with the page behind a proxy or not, and the
// instance stopped (SIGTERM) or killed (SIGKILL, once the page's place is saved).
func ridesThroughRestart(t *testing.T, behindProxy, killed bool) {
	room := uniqueRoom(t)
	f := startFleet(t, 1, func(int) string { return roomBlock(room, "/shop*", 1, "memory") })
	nd := f.nodes[0]
	holder := newGuest()
	if _, in, err := holder.place(nd.base, "/shop/cart"); err != nil || !in {
		t.Fatalf("the first visitor was not let in (%v)", err)
	}
	ahead := []*guest{newGuest(), newGuest()}
	for i, g := range ahead {
		if q, in, err := g.place(nd.base, "/shop/cart"); err != nil || in || q.Position != i+1 {
			t.Fatalf("waiter %d: admitted=%v %+v %v", i+1, in, q, err)
		}
	}

	base := nd.base
	if behindProxy {
		target, _ := url.Parse(nd.base)
		proxy := httptest.NewServer(&httputil.ReverseProxy{
			Rewrite: func(r *httputil.ProxyRequest) {
				r.SetURL(target)
				r.Out.Host = r.In.Host // the site's, as a load balancer passes it on
			},
			ErrorLog: log.New(io.Discard, "", 0),
		})
		t.Cleanup(proxy.Close)
		base = proxy.URL
	}

	b := newBrowser(t)
	sockets := listenSockets(b)
	const uri = "/shop/tickets?row=4"
	b.do(chromedp.Navigate(base + uri))
	b.showing("wr-position", "3")
	first, _ := b.untilReported("the page's load", 0, func(e pageEvent) bool { return e.Kind == "load" })
	eventually(t, "the page's socket to be told its place", func() (bool, string) {
		created, opened, heard := sockets.counts()
		return opened == 1 && heard, fmt.Sprintf("%d sockets, %d opened, heard %v", created, opened, heard)
	})

	if killed {
		savedSince(t, stateFileOf(nd, room), time.Now())
		nd.kill(t)
	} else {
		nd.stop(t)
	}
	createdAtStop, _, _ := sockets.counts()
	polledAtStop := sockets.polled()
	eventually(t, "the page to try its socket and its poll again while the instance is down", func() (bool, string) {
		created, opened, _ := sockets.counts()
		polled := sockets.polled()
		return created > createdAtStop && polled > polledAtStop,
			fmt.Sprintf("%d sockets, %d opened, %d polls", created, opened, polled)
	})
	b.showing("wr-position", "3")
	if title := eval[string](b, `document.title`); !strings.HasPrefix(title, "3 · ") {
		t.Errorf("while the instance is down the page's title is %q", title)
	}
	_, openedDown, _ := sockets.counts()

	f.restart(nd)
	eventually(t, "the page to open a socket on its own after the restart, and be told its place", func() (bool, string) {
		created, opened, heard := sockets.counts()
		return opened > openedDown && heard, fmt.Sprintf("%d sockets, %d opened, heard %v", created, opened, heard)
	})
	b.showing("wr-position", "3")

	// In its turn: after the holder and each waiter ahead has gone in and checked out.
	checkout := func(who string, g *guest) {
		t.Helper()
		if _, body, err := g.get(nd.base, "/shop/done", ""); err != nil || body != "done" {
			t.Fatalf("%s's checkout: %q %v", who, body, err)
		}
	}
	checkout("the holder", holder)
	for i, g := range ahead {
		who := fmt.Sprintf("waiter %d", i+1)
		waitFor(t, who+" to be let in", func() bool {
			_, in, err := g.place(nd.base, "/shop/cart")
			return err == nil && in
		})
		b.showing("wr-position", fmt.Sprint(len(ahead)-i))
		if got := eval[string](b, `location.pathname + location.search`); got != uri {
			t.Fatalf("the page left for %s while %s was in", got, who)
		}
		for _, e := range b.log.snapshot() {
			if e.Kind == "load" && e.Doc != first.Doc {
				t.Fatalf("the waiting page was loaded again (%s) instead of riding through the restart", e.Text)
			}
		}
		checkout(who, g)
	}
	eventually(t, "the page to be let in, at its address", func() (bool, string) {
		got, err := tryEval[[]string](b, `[location.href, document.body ? document.body.innerText : ""]`)
		if err != nil || len(got) != 2 {
			return false, fmt.Sprintf("%q (%v)", got, err)
		}
		return got[0] == base+uri && strings.TrimSpace(got[1]) == "upstream "+strings.Split(uri, "?")[0]+" node0",
			fmt.Sprintf("%s showing %q", got[0], got[1])
	})
	created, opened, _ := sockets.counts()
	t.Logf("the page opened %d sockets (%d answered 101) across the restart", created, opened)
}

// A room whose waiting answers are 503 (status_code 503) is still the room to the
// page: its poll takes the room's JSON as the place, whatever the status, and only a
// server error that is not the room's JSON as a failed poll. Here the socket is
// blocked, so the number moves by polls alone, and the page gets in.
func TestBrowserPollsTheRoomsOwn503(t *testing.T) {
	up := startBrowserSite(t, browserSite{
		room:    uniqueRoom(t),
		options: "capacity 1\n\t\tqueue_ttl 24s\n\t\tstatus_code 503",
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
	const uri = "/drops/5"
	b.do(chromedp.Navigate(liveBase + uri))
	b.showing("wr-position", "2")
	first, _ := b.untilReported("the page's load", 0, func(e pageEvent) bool { return e.Kind == "load" })
	buyer.get("/checkout", "")
	if e, _ := b.untilReported("number 1 by polling", 0, func(e pageEvent) bool { return e.Kind == "position" && e.Text == "1" }); e.Doc != first.Doc {
		t.Fatal("the page reloaded instead of polling")
	}
	second.get("/checkout", "")
	b.landedOn(uri)
	if got := up.requests(uri); len(got) == 0 {
		t.Fatalf("the upstream saw %q", got)
	}
}
