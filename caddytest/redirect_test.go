package caddytest

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// rawGet sends one GET with the request-target exactly as given (net/http would clean
// or reject it) and returns the response.
func rawGet(t *testing.T, target string, header http.Header) *http.Response {
	t.Helper()
	conn, err := net.DialTimeout("tcp", "localhost:9080", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	b.WriteString("GET " + target + " HTTP/1.1\r\nHost: localhost:9080\r\nConnection: close\r\n")
	for name, vs := range header {
		for _, v := range vs {
			b.WriteString(name + ": " + v + "\r\n")
		}
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestLiveProofRedirectStaysOnTheSite: with proof_of_work on, a new visitor opens
// http://localhost:9080//evil.example/ (and its kin), solves the challenge and sends the
// proof in the address, as the challenge page does; the 303 that takes the proof out of
// the address must send the browser to a path on this site, never to evil.example.
func TestLiveProofRedirectStaysOnTheSite(t *testing.T) {
	startLive(t, uniqueRoom(t), "capacity 1\n\t\tproof_of_work 8")
	for _, target := range []string{"//evil.example/", "///evil.example/x?a=1", `/\evil.example/`, "/%2F/evil.example/", "http://localhost:9080//evil.example/"} {
		t.Run(target, func(t *testing.T) {
			ask := rawGet(t, target, http.Header{"Accept": {"application/json"}})
			var c challengeAnswer
			if err := json.NewDecoder(ask.Body).Decode(&c); err != nil || c.Status != "challenge" {
				t.Fatalf("%s: %d, %+v, %v", target, ask.StatusCode, c, err)
			}
			sep := "?"
			if strings.Contains(target, "?") {
				sep = "&"
			}
			resp := rawGet(t, target+sep+"waiting_room_proof="+url.QueryEscape(solveChallenge(t, c)), http.Header{"Accept": {"text/html"}})
			loc := resp.Header.Get("Location")
			if resp.StatusCode != http.StatusSeeOther || len(resp.Header.Values("Set-Cookie")) == 0 {
				t.Fatalf("%s: %d, Set-Cookie %q, want 303 with a cookie", target, resp.StatusCode, resp.Header.Values("Set-Cookie"))
			}
			// The browser's reading: a backslash is a slash, then resolve against the page.
			base, _ := url.Parse("http://localhost:9080/")
			ref, err := url.Parse(strings.ReplaceAll(loc, `\`, "/"))
			if err != nil || !strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "//") || base.ResolveReference(ref).Host != "localhost:9080" {
				t.Fatalf("%s: Location %q leaves the site", target, loc)
			}
		})
	}
}

// TestLiveForeignSocketsMakeNoPlace: 20 cookie-less waiting WebSockets opened from a
// page on another site, against a full room: 20 refusals (403, no upgrade), no cookie
// on any, and the line is as it was.
func TestLiveForeignSocketsMakeNoPlace(t *testing.T) {
	room := uniqueRoom(t)
	startLive(t, room, "capacity 1")
	holder, waiter := newVisitor(t), newVisitor(t)
	if _, admitted := holder.place("/"); !admitted {
		t.Fatal("first visitor queued")
	}
	if q, admitted := waiter.place("/"); admitted || q.Position != 1 {
		t.Fatalf("second visitor: admitted %v, position %d", admitted, q.Position)
	}
	before := roomInfo(t, room)
	for i := range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, resp, err := websocket.Dial(ctx, "ws://localhost:9080/tickets", &websocket.DialOptions{
			Subprotocols: []string{"waiting-room.v1"},
			HTTPHeader:   http.Header{"Origin": {"https://evil.example"}},
		})
		cancel()
		if err == nil {
			c.CloseNow()
			t.Fatalf("upgrade %d: the WebSocket was opened", i)
		}
		if resp == nil || resp.StatusCode != http.StatusForbidden || len(resp.Header.Values("Set-Cookie")) != 0 {
			t.Fatalf("upgrade %d: want 403 without a cookie, got %v", i, resp)
		}
	}
	after := roomInfo(t, room)
	if after.Active != before.Active || after.Waiting != before.Waiting || after.Away != before.Away || after.AdmittedTotal != before.AdmittedTotal {
		t.Fatalf("20 cross-site upgrades changed the room: %+v, was %+v", after, before)
	}
	if q, admitted := waiter.place("/"); admitted || q.Position != 1 {
		t.Fatalf("the waiter is at %d (admitted %v), want 1", q.Position, admitted)
	}
}
