package caddytest

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// bypassSite is the README's bypass recipe in front of a full room of capacity 1. The
// allow-listed network and the crawlers' network are documentation ranges the test
// sends as X-Forwarded-For. (remote_ip would see 127.0.0.1 on every request here, the
// visitors' too, so it could not tell an allow-listed client from anyone else.)
func bypassSite(room string) string {
	return fmt.Sprintf(`	@room {
		not path /static/* /healthz
		not client_ip 203.0.113.0/24
		not {
			header_regexp User-Agent (?i)(googlebot|bingbot)
			client_ip 198.51.100.0/24
		}
	}
	waiting_room @room {
		name %s
		capacity 1
	}
	respond "upstream {path}"`, room)
}

const googlebot = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"

// send is get with request headers of the test's choosing.
func (v *visitor) send(path string, hdr http.Header) (*http.Response, string) {
	v.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, liveBase+path, nil)
	for k, vals := range hdr {
		req.Header[k] = vals
	}
	resp, err := v.client.Do(req)
	if err != nil {
		v.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// roomCookies are the room's cookies the visitor holds.
func (v *visitor) roomCookies() []string {
	u, _ := url.Parse(liveBase)
	var names []string
	for _, c := range v.client.Jar.Cookies(u) {
		if strings.HasPrefix(c.Name, "waiting_room_") {
			names = append(names, c.Name)
		}
	}
	return names
}

func TestLiveBypassedRequestsAreNeitherQueuedNorCounted(t *testing.T) {
	room := uniqueRoom(t)
	startSite(t, bypassSite(room))
	if _, admitted := newVisitor(t).place("/"); !admitted {
		t.Fatal("the first visitor was queued in an empty room")
	}
	waiter := newVisitor(t)
	if q, admitted := waiter.place("/"); admitted || q.Position != 1 {
		t.Fatalf("the second visitor of capacity 1: admitted %v, %+v", admitted, q)
	}
	before := roomInfo(t, room)
	if before.Active != 1 || before.Waiting != 1 {
		t.Fatalf("full room reads active %d, waiting %d", before.Active, before.Waiting)
	}

	tests := []struct {
		name, path string
		hdr        http.Header
	}{
		{"static asset", "/static/app.js", nil},
		{"nested static asset", "/static/img/logo.svg?v=3", nil},
		{"health check", "/healthz", nil},
		{"allow-listed network", "/tickets", http.Header{"X-Forwarded-For": {"203.0.113.7"}}},
		{"Googlebot from its network", "/tickets", http.Header{"User-Agent": {googlebot}, "X-Forwarded-For": {"198.51.100.20"}}},
		{"bingbot from its network", "/", http.Header{"User-Agent": {"Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)"}, "X-Forwarded-For": {"198.51.100.21"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantBody := "upstream " + strings.SplitN(tt.path, "?", 2)[0]
			same := newVisitor(t) // one client coming back, as a crawler or a monitor does
			for i := 0; i < 20; i++ {
				v := same
				if i%2 == 1 {
					v = newVisitor(t)
				}
				resp, body := v.send(tt.path, tt.hdr)
				if resp.StatusCode != http.StatusOK || body != wantBody {
					t.Fatalf("request %d: %d %q, want the upstream's %q", i+1, resp.StatusCode, short(body), wantBody)
				}
				for _, c := range resp.Cookies() {
					if strings.HasPrefix(c.Name, "waiting_room_") {
						t.Fatalf("request %d was given the room cookie %s", i+1, c.Name)
					}
				}
				if got := v.roomCookies(); len(got) > 0 {
					t.Fatalf("request %d: the visitor holds %v", i+1, got)
				}
			}
		})
	}

	// A waiter's own requests for static files pass too, and cost it nothing.
	if resp, body := waiter.send("/static/app.css", nil); body != "upstream /static/app.css" {
		t.Fatalf("waiter's static asset: %d %q", resp.StatusCode, short(body))
	}
	if q, _ := waiter.place("/"); q.Position != 1 {
		t.Fatalf("after bypassed requests the waiter is at %d, want 1", q.Position)
	}

	after := roomInfo(t, room)
	if after.Active != before.Active || after.Waiting != before.Waiting || after.AdmittedTotal != before.AdmittedTotal {
		t.Fatalf("bypassed requests changed the room: active %d->%d, waiting %d->%d, admitted %d->%d",
			before.Active, after.Active, before.Waiting, after.Waiting, before.AdmittedTotal, after.AdmittedTotal)
	}

	// Everyone else still queues: a plain visitor, someone merely calling itself
	// Googlebot, and paths that only look like the bypassed ones.
	queued := []struct {
		name, path string
		hdr        http.Header
	}{
		{"plain visitor", "/tickets", nil},
		{"Googlebot's user agent from elsewhere", "/tickets", http.Header{"User-Agent": {googlebot}, "X-Forwarded-For": {"192.0.2.50"}}},
		{"crawler network without a crawler's user agent", "/tickets", http.Header{"X-Forwarded-For": {"198.51.100.20"}}},
		{"a path beginning like the static folder", "/static-offers", nil},
		{"a path beginning like the health check", "/healthz/../tickets", nil},
	}
	position := before.Waiting
	for _, tt := range queued {
		hdr := tt.hdr.Clone()
		if hdr == nil {
			hdr = http.Header{}
		}
		hdr.Set("Accept", "application/json")
		resp, body := newVisitor(t).send(tt.path, hdr)
		if strings.HasPrefix(body, "upstream ") {
			t.Errorf("%s: reached the upstream past a full room", tt.name)
			continue
		}
		position++
		if !strings.Contains(body, `"status":"queued"`) || !strings.Contains(body, fmt.Sprintf(`"position":%d,`, position)) {
			t.Errorf("%s: %d %q, want queued at %d", tt.name, resp.StatusCode, short(body), position)
		}
	}
	if got := roomInfo(t, room); got.Waiting != before.Waiting+len(queued) || got.Active != before.Active {
		t.Errorf("after %d queued visitors the room reads active %d, waiting %d", len(queued), got.Active, got.Waiting)
	}
}

// rewrite and try_files run before waiting_room in Caddy's directive order, so the
// room's matcher sees the rewritten path. A single-page app that rewrites /shop/* to
// /index.html needs its room matched on the original URI, or the room run first inside
// a route; matching the rewritten path silently lets everyone in.
func TestLiveRoomAfterRewriteMatchesOriginalURI(t *testing.T) {
	tests := []struct {
		name, site string
		roomWorks  bool
	}{
		{"path matcher sees the rewritten path", `	rewrite /shop/* /index.html
	@room path /shop/*
	waiting_room @room {
		name %s
		capacity 1
	}
	respond "upstream {path}"`, false},
		{"matched on the original URI", `	rewrite /shop/* /index.html
	@room vars_regexp {http.request.orig_uri.path} ^/shop/
	waiting_room @room {
		name %s
		capacity 1
	}
	respond "upstream {path}"`, true},
		{"room first in a route", `	route {
		waiting_room /shop/* {
			name %s
			capacity 1
		}
		rewrite /shop/* /index.html
	}
	respond "upstream {path}"`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			room := uniqueRoom(t)
			startSite(t, fmt.Sprintf(tt.site, room))
			for _, path := range []string{"/about", "/index.html"} {
				if _, admitted := newVisitor(t).place(path); !admitted {
					t.Fatalf("%s, outside the room, was queued", path)
				}
			}
			if _, admitted := newVisitor(t).place("/shop/cart"); !admitted {
				t.Fatal("the first shopper was queued in an empty room")
			}
			_, admitted := newVisitor(t).place("/shop/checkout")
			if admitted == tt.roomWorks {
				t.Fatalf("second shopper of capacity 1: admitted %v, want %v", admitted, !tt.roomWorks)
			}
			info := roomInfo(t, room)
			if tt.roomWorks && (info.Active != 1 || info.Waiting != 1) {
				t.Fatalf("room reads active %d, waiting %d, want 1 and 1", info.Active, info.Waiting)
			}
			if !tt.roomWorks && (info.Active != 0 || info.Waiting != 0) {
				t.Fatalf("room reads active %d, waiting %d, want 0 and 0: it never ran", info.Active, info.Waiting)
			}
		})
	}
}
