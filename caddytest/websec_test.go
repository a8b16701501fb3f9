package caddytest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// dialWaiting opens the waiting WebSocket at path with the visitor's cookies and the
// given Origin ("" sends none, as a non-browser client does).
func (v *visitor) dialWaiting(path, origin string) (*websocket.Conn, *http.Response, error) {
	v.t.Helper()
	u, _ := url.Parse(liveBase + path)
	hdr := http.Header{}
	for _, c := range v.client.Jar.Cookies(u) {
		hdr.Add("Cookie", c.Name+"="+c.Value)
	}
	if origin != "" {
		hdr.Set("Origin", origin)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "ws://localhost:9080"+path, &websocket.DialOptions{
		Subprotocols: []string{"waiting-room.v1"},
		HTTPHeader:   hdr,
	})
	if c != nil {
		v.t.Cleanup(func() { c.CloseNow() })
	}
	return c, resp, err
}

// A page on another site cannot open a waiter's WebSocket with the waiter's cookie
// (cross-site WebSocket hijacking): it could read the place and send "leave". The
// handshake checks Origin against the Host: another site, a look-alike host or an
// opaque "null" origin gets 403 and no upgrade, and the waiter keeps its place; the
// site itself and clients that send no Origin (not browsers) are let in.
func TestLiveWebSocketOriginCheck(t *testing.T) {
	startLive(t, uniqueRoom(t), "capacity 1")
	holder, waiter := newVisitor(t), newVisitor(t)
	if _, admitted := holder.place("/"); !admitted {
		t.Fatal("first visitor queued")
	}
	if _, admitted := waiter.place("/tickets"); admitted {
		t.Fatal("second visitor got in with capacity 1")
	}
	for _, tc := range []struct {
		origin string
		ok     bool
	}{
		{"https://evil.example", false},
		{"http://evil.example", false},
		{"http://evil.example:9080", false},
		{"http://localhost:9080.evil.example", false},
		{"http://localhost.evil.example:9080", false},
		{"http://localhost:9081", false},
		{"null", false},
		{"file://", false},
		{liveBase, true},
		{"", true},
	} {
		t.Run("origin "+tc.origin, func(t *testing.T) {
			c, resp, err := waiter.dialWaiting("/tickets", tc.origin)
			if !tc.ok {
				if err == nil {
					t.Fatalf("Origin %q: the WebSocket was opened", tc.origin)
				}
				if resp == nil || resp.StatusCode != http.StatusForbidden || resp.Header.Get("Upgrade") != "" ||
					resp.Header.Get("Sec-WebSocket-Accept") != "" {
					t.Fatalf("Origin %q: want 403 without an upgrade, got %v", tc.origin, resp)
				}
			} else {
				if err != nil {
					t.Fatalf("Origin %q: %v (%v)", tc.origin, err, resp)
				}
				if m := next(t, c); m.Type != "position" || m.Position != 1 {
					t.Fatalf("Origin %q: first message %+v", tc.origin, m)
				}
				c.Close(websocket.StatusNormalClosure, "")
			}
			if q, admitted := waiter.place("/tickets"); admitted || q.Position != 1 {
				t.Fatalf("after Origin %q the waiter is at %d (admitted %v), want 1", tc.origin, q.Position, admitted)
			}
		})
	}
}

// A client message is at most 512 bytes (the only message is a short {"type":"leave"}):
// a longer one closes the socket with 1009 (message too big) unread, so even a padded
// "leave" costs nothing, and the waiter reconnects to the same place. A message of
// exactly the limit is read as usual.
func TestLiveOversizedClientMessageClosesAndKeepsThePlace(t *testing.T) {
	startLive(t, uniqueRoom(t), "capacity 1")
	holder, ahead, me := newVisitor(t), newVisitor(t), newVisitor(t)
	holder.place("/")
	ahead.place("/")
	if q, _ := me.place("/"); q.Position != 2 {
		t.Fatalf("starting at %d, want 2", q.Position)
	}
	leave := `{"type":"leave"}`
	padded := func(n int) []byte { return []byte(leave + strings.Repeat(" ", n-len(leave))) }

	ws := me.socket("/")
	next(t, ws)
	if err := ws.Write(context.Background(), websocket.MessageText, padded(513)); err != nil {
		t.Fatal(err)
	}
	if code := closedWith(t, ws); code != websocket.StatusMessageTooBig {
		t.Fatalf("an oversized message closed the socket with %v, want 1009 (message too big)", code)
	}
	if q, admitted := me.place("/"); admitted || q.Position != 2 {
		t.Fatalf("after the oversized message the waiter is at %d, want 2", q.Position)
	}
	if m := next(t, me.socket("/")); m.Type != "position" || m.Position != 2 {
		t.Fatalf("a new socket's first message is %+v, want position 2", m)
	}

	// Exactly the limit: read, and here a leave, so the place is given up (1000, "left")
	// and the waiter behind moves up.
	aheadWS := ahead.socket("/")
	next(t, aheadWS)
	if err := aheadWS.Write(context.Background(), websocket.MessageText, padded(512)); err != nil {
		t.Fatal(err)
	}
	if code := closedWith(t, aheadWS); code != websocket.StatusNormalClosure {
		t.Fatalf("a %d-byte leave closed the socket with %v, want 1000 (left)", 512, code)
	}
	if q, _ := me.place("/"); q.Position != 1 {
		t.Fatalf("after the waiter ahead left, at %d, want 1", q.Position)
	}
}

// closedWith reads c until the server closes it and returns the close code.
func closedWith(t *testing.T, c *websocket.Conn) websocket.StatusCode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for {
		_, _, err := c.Read(ctx)
		if err == nil {
			continue // a position pushed before the close
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) {
			t.Fatalf("the socket ended without a close frame: %v", err)
		}
		return ce.Code
	}
}

// Every upgrade that asks for the room's subprotocol is the room's, an admitted
// visitor's too (a stale tab, or a page whose place was let in meanwhile): it is
// told {"type":"admitted"} and closed 1000 "admitted", never handed to the shop,
// which does not speak it (docs/waiting-page.md, "WebSocket"). The shop's own
// WebSockets, which ask for no such subprotocol, are not the room's.
func TestLiveAdmittedVisitorsSocketIsTold(t *testing.T) {
	startLive(t, uniqueRoom(t), "capacity 1")
	holder := newVisitor(t)
	if _, admitted := holder.place("/"); !admitted {
		t.Fatal("first visitor queued")
	}
	ws := holder.socket("/tickets")
	if m := next(t, ws); m.Type != "admitted" {
		t.Fatalf("an admitted visitor's socket was told %+v, want admitted", m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _, err := ws.Read(ctx)
	if status := websocket.CloseStatus(err); status != websocket.StatusNormalClosure {
		t.Fatalf("after admitted, the socket ended with %v, want closed 1000", err)
	}
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Reason != "admitted" {
		t.Fatalf("the close says %v, want reason admitted", err)
	}
	u, _ := url.Parse(liveBase + "/tickets")
	hdr := http.Header{"Origin": {liveBase}}
	for _, c := range holder.client.Jar.Cookies(u) {
		hdr.Add("Cookie", c.Name+"="+c.Value)
	}
	c, resp, err := websocket.Dial(ctx, "ws://localhost:9080/tickets", &websocket.DialOptions{Subprotocols: []string{"shop.v1"}, HTTPHeader: hdr})
	if err == nil {
		c.CloseNow()
		t.Fatal("the shop's own upgrade was taken by the room")
	}
	if resp == nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the shop's own upgrade: %v, want the shop's answer (200, it speaks no WebSocket)", resp)
	}
	if body, _ := io.ReadAll(resp.Body); string(body) != "upstream /tickets" {
		t.Fatalf("the shop's own upgrade was answered %q, want the shop's", body)
	}
}

// Another site's page opens the waiting socket at someone's hand-off link, from a
// browser with no place and from one with a place: 403 before the code is looked at,
// no cookie, the line as it was, and the code still moves its place when opened by
// hand afterwards.
func TestLiveForeignSocketAtAHandoffLinkTakesNothing(t *testing.T) {
	room := uniqueRoom(t)
	startLive(t, room, "capacity 1")
	newVisitor(t).place("/")
	holder, other := newVisitor(t), newVisitor(t)
	holder.place("/tickets")
	other.place("/tickets")
	link := holder.askHandoffVia("/tickets", "")
	before := roomInfo(t, room)
	for _, v := range []*visitor{newVisitor(t), other} {
		c, resp, err := v.dialWaiting(strings.TrimPrefix(link, liveBase), "https://evil.example")
		if err == nil {
			c.CloseNow()
			t.Fatal("another site's socket at a hand-off link was opened")
		}
		if resp == nil || resp.StatusCode != http.StatusForbidden || len(resp.Header.Values("Set-Cookie")) != 0 {
			t.Fatalf("another site's socket at a hand-off link: %v, want 403 without a cookie", resp)
		}
	}
	if after := roomInfo(t, room); after.Active != before.Active || after.Waiting != before.Waiting {
		t.Fatalf("the refused sockets changed the room: %+v, was %+v", after, before)
	}
	if q, admitted := holder.place("/tickets"); admitted || q.Position != 1 {
		t.Fatalf("the code's holder is at %d (admitted %v), want still 1", q.Position, admitted)
	}
	phone := newVisitor(t)
	if q, admitted := phone.place(strings.TrimPrefix(link, liveBase)); admitted || q.Position != 1 {
		t.Fatalf("the code opened by hand afterwards: at %d (admitted %v), want the place at 1", q.Position, admitted)
	}
}
