package caddytest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAdaptHostileClients: admitted clients that attack the adaptive capacity, one
// attack after another, against a real shop that answers its cheap page at once,
// behind a real Caddy. Only what the shop itself did may move the capacity:
//
//   - malformed chunked bodies, which Caddy's proxy answers 502 itself, are no
//     failures of the shop (they are not counted at all);
//   - slow uploads are timed from when the shop had the whole request, so they read
//     as the fast answers they are;
//   - requests the client gave up on are not counted;
//   - one client flooding the cheap page cannot outvote the visitors who wait on the
//     shop's real, slow pages: the capacity never goes up for it.
//
// Each attack is read by the count of what the room measured (the ttfb histogram's
// count, the failed counter) and by the controller's decision on the periods it fell
// in, waited for by their decided_at: no wall-clock threshold.
func TestAdaptHostileClients(t *testing.T) {
	const capacity = 10
	shop := startShop(t, 50, 0)
	room := uniqueRoom(t)
	f := startFleet(t, 1, func(int) string {
		return roomBlock(room, "/shop*", capacity, "memory", "session_ttl 10m",
			"adapt {\n\t\t\tlatency 300ms\n\t\t\tmin 1\n\t\t\tmax 40\n\t\t}") + shop.route("/shop*")
	})
	nd := f.nodes[0]
	base, _ := url.Parse(nd.base)

	measured := func() (count, failed float64) {
		return metricAt(t, nd.admin, "caddy_waiting_room_upstream_ttfb_seconds_count", room),
			metricAt(t, nd.admin, "caddy_waiting_room_upstream_failed_total", room)
	}
	// settled waits for the controller to decide on the period that holds after, and
	// returns the room as it then stands: everything measured before after is in the
	// metrics, and decided on.
	settled := func(what string, after time.Time) hostileAdapt {
		t.Helper()
		var a hostileAdapt
		waitFor(t, "a decision on the period after "+what, func() bool {
			var err error
			a, err = readHostileAdapt(nd, room)
			return err == nil && a.Adapt != nil && a.Adapt.DecidedAt != nil && a.Adapt.DecidedAt.After(after)
		})
		t.Logf("after %s: capacity %d, %s", what, a.Capacity, a.reason())
		return a
	}
	var guests []*guest
	admit := func(n int) {
		t.Helper()
		for range n {
			g := newGuest()
			code, body, err := g.get(nd.base, "/shop/fast", "application/json")
			if err != nil || !strings.HasPrefix(body, "item ") {
				t.Fatalf("guest %d not admitted: %d %q %v", len(guests), code, short(body), err)
			}
			guests = append(guests, g)
		}
	}
	honest := 0 // requests the shop answered, which the room counts
	admit(1)
	honest++

	// (a) Malformed chunked bodies: the proxy answers them itself.
	cookie := cookieHeader(guests[0], base)
	const badChunks = 100
	for i := range badChunks {
		if code := badChunkedPost(t, base.Host, cookie); i == 0 {
			t.Logf("a bad chunked body was answered %d", code)
		}
	}
	a := settled("the bad chunked bodies", time.Now())
	count, failed := measured()
	if failed != 0 || count != float64(honest) {
		t.Errorf("after %d malformed chunked bodies, the room counted %v requests and %v failed; want the shop's %d and 0",
			badChunks, count, failed, honest)
	}
	if a.Capacity != capacity {
		t.Fatalf("the malformed chunked bodies moved the capacity: %d, want %d (%s)", a.Capacity, capacity, a.reason())
	}

	// (b) Slow uploads: 6 visitors, 8 POSTs each, 10 bytes at a byte per 100ms, to a
	// page the shop answers at once once it has the body.
	admit(5)
	honest += 5
	const uploads = 8
	var wg sync.WaitGroup
	var errs failureLog
	for _, g := range guests {
		for range uploads {
			wg.Go(func() {
				req, _ := http.NewRequest(http.MethodPost, nd.base+"/shop/fast", &dripBody{left: 10, every: 100 * time.Millisecond})
				req.ContentLength = 10
				resp, err := g.client.Do(req)
				if err != nil {
					errs.add("slow upload: %v", err)
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !strings.HasPrefix(string(body), "item ") {
					errs.add("slow upload: %d %q", resp.StatusCode, short(string(body)))
				}
			})
		}
	}
	wg.Wait()
	if errs.count() > 0 {
		t.Fatalf("%d slow uploads went wrong, first: %v", errs.count(), errs.msgs)
	}
	honest += len(guests) * uploads
	a = settled("the slow uploads", time.Now())
	if count, failed := measured(); count != float64(honest) || failed != 0 {
		t.Errorf("after the slow uploads the room counted %v requests, %v failed; want %d, 0", count, failed, honest)
	}
	if a.Capacity != capacity {
		t.Fatalf("the slow uploads moved the capacity: %d, want %d (%s)", a.Capacity, capacity, a.reason())
	}

	// Item 5: 30 GET /slow?ms=3000 the client gives up on after a second.
	const abandoned = 5
	for _, g := range guests {
		for range abandoned {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, nd.base+"/shop/slow?ms=3000", nil)
				if resp, err := g.client.Do(req); err == nil {
					resp.Body.Close()
					errs.add("an abandoned request was answered: %d", resp.StatusCode)
				}
			})
		}
	}
	wg.Wait()
	if errs.count() > 0 {
		t.Fatalf("%v", errs.msgs)
	}
	// The proxy sees the client go a moment after the client does: the period after
	// the next one holds it.
	a = settled("the abandoned requests", time.Now().Add(2*time.Second))
	if count, failed := measured(); count != float64(honest) || failed != 0 {
		t.Errorf("after %d abandoned requests the room counted %v requests, %v failed; want %d, 0",
			len(guests)*abandoned, count, failed, honest)
	}
	if a.Capacity != capacity {
		t.Fatalf("the abandoned requests moved the capacity: %d, want %d (%s)", a.Capacity, capacity, a.reason())
	}

	// Item 4: the room full and a line waiting; the shop's real pages take 600ms
	// against the 300ms target, and one admitted client floods the cheap page.
	admit(capacity - len(guests))
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var run sync.WaitGroup
	defer run.Wait()
	defer stop()
	waiter := newGuest()
	run.Go(func() { // in line, polling as the page does
		for ctx.Err() == nil {
			_, _, _ = waiter.get(nd.base, "/shop/fast", "application/json")
			sleepCtx(ctx, time.Second)
		}
	})
	for _, g := range guests[1:] {
		run.Go(func() {
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, nd.base+"/shop/slow?ms=600", nil)
				if resp, err := g.client.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
	}
	for range 4 {
		run.Go(func() {
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, nd.base+"/shop/fast", nil)
				if resp, err := guests[0].client.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
	}
	waitFor(t, "the line to wait", func() bool {
		return metricAt(t, nd.admin, "caddy_waiting_room_waiting", room) >= 1
	})
	from := time.Now()
	for i := range 5 {
		a = settled(fmt.Sprintf("flood period %d", i+1), from)
		from = *a.Adapt.DecidedAt
		if a.Capacity > capacity || strings.HasPrefix(a.reason(), "raised") {
			t.Fatalf("one client flooding the cheap page raised the capacity to %d (%s), with the shop's pages slow", a.Capacity, a.reason())
		}
	}
}

// hostileAdapt is the admin room object's capacity and the controller's last decision.
type hostileAdapt struct {
	Capacity int `json:"capacity"`
	Adapt    *struct {
		Reason    *string    `json:"reason"`
		Requests  *uint64    `json:"requests"`
		P90       *string    `json:"p90"`
		DecidedAt *time.Time `json:"decided_at"`
	} `json:"adapt"`
}

func (a hostileAdapt) reason() string {
	if a.Adapt == nil || a.Adapt.Reason == nil {
		return ""
	}
	r := *a.Adapt.Reason
	if a.Adapt.Requests != nil && a.Adapt.P90 != nil {
		r += fmt.Sprintf(" (%d requests, p90 %s)", *a.Adapt.Requests, *a.Adapt.P90)
	}
	return r
}

func readHostileAdapt(nd *node, room string) (hostileAdapt, error) {
	var a hostileAdapt
	resp, err := http.Get(nd.admin + "/waiting_room/" + room)
	if err != nil {
		return a, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return a, fmt.Errorf("GET room: %d", resp.StatusCode)
	}
	return a, json.NewDecoder(resp.Body).Decode(&a)
}

// cookieHeader is g's Cookie header for u.
func cookieHeader(g *guest, u *url.URL) string {
	var parts []string
	for _, c := range g.client.Jar.Cookies(u) {
		parts = append(parts, c.Name+"="+c.Value)
	}
	return strings.Join(parts, "; ")
}

// badChunkedPost sends, on a connection of its own, a POST whose chunked body is
// malformed (a chunk size that is no number), and returns the status it got (0: the
// connection closed without one).
func badChunkedPost(t *testing.T, host, cookie string) int {
	t.Helper()
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(eventDeadline)) // liveness, not the assertion
	fmt.Fprintf(conn, "POST /shop/fast HTTP/1.1\r\nHost: %s\r\nCookie: %s\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", host, cookie)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// dripBody is a request body that sends one byte every so often: a slow upload.
type dripBody struct {
	left  int
	every time.Duration
}

func (d *dripBody) Read(p []byte) (int, error) {
	if d.left == 0 {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	time.Sleep(d.every)
	d.left--
	p[0] = 'x'
	return 1, nil
}
