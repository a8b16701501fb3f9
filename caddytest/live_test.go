package caddytest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"
	"github.com/coder/websocket"
)

func TestLiveFirstNPassRestQueueInArrivalOrder(t *testing.T) {
	room := uniqueRoom(t)
	startLive(t, room, "capacity 3")
	var waiters []*visitor
	for i := 0; i < 8; i++ {
		v := newVisitor(t)
		q, admitted := v.place("/tickets")
		if i < 3 {
			if !admitted {
				t.Fatalf("visitor %d of capacity 3 was queued", i+1)
			}
			continue
		}
		if admitted {
			t.Fatalf("visitor %d got in beyond capacity 3", i+1)
		}
		if q.Room != room || q.Capacity != 3 || q.RefreshSeconds <= 0 {
			t.Fatalf("queued answer %+v", q)
		}
		waiters = append(waiters, v)
	}
	for i, v := range waiters {
		if q, _ := v.place("/tickets"); q.Position != i+1 {
			t.Fatalf("waiter %d is at position %d", i+1, q.Position)
		}
	}

	// A browser gets the page, with the headers a waiting page must have.
	code, hdr, body := newVisitor(t).get("/tickets", "text/html,*/*;q=0.8")
	if code != http.StatusOK || hdr.Get("Cache-Control") != "no-store" || hdr.Get("Retry-After") == "" ||
		!strings.Contains(body, "<html") {
		t.Fatalf("waiting page: %d %v", code, hdr)
	}
}

// The whole life of a waiter over its WebSocket: a position at once, a better one when
// someone ahead leaves, and "admitted" when the upstream revokes a session.
func TestLiveWebSocketPositionsThenAdmitted(t *testing.T) {
	startLive(t, uniqueRoom(t), "capacity 1")
	buyer, ahead, me := newVisitor(t), newVisitor(t), newVisitor(t)
	if _, admitted := buyer.place("/"); !admitted {
		t.Fatal("first visitor queued")
	}
	ahead.place("/")
	me.place("/tickets?id=7")

	ws := me.socket("/tickets?id=7")
	if m := next(t, ws); m.Type != "position" || m.Position != 2 || m.Capacity != 1 {
		t.Fatalf("first message %+v", m)
	}

	// The waiter ahead gives up its place over its own socket.
	aheadWS := ahead.socket("/")
	next(t, aheadWS)
	if err := aheadWS.Write(context.Background(), websocket.MessageText, []byte(`{"type":"leave"}`)); err != nil {
		t.Fatal(err)
	}
	until(t, ws, "position 1", func(m queueAnswer) bool { return m.Position == 1 })

	// The buyer checks out; the upstream's revoke frees the slot, and the header never
	// reaches the buyer.
	_, hdr, body := buyer.get("/checkout", "")
	if body != "order placed" || hdr.Get("Waiting-Room-Command") != "" {
		t.Fatalf("checkout: %q, header %q", body, hdr.Get("Waiting-Room-Command"))
	}
	until(t, ws, "admitted", func(m queueAnswer) bool { return m.Type == "admitted" })
	if _, _, body := me.get("/tickets?id=7", "text/html"); body != "upstream /tickets" {
		t.Fatalf("after admission the page got %q", body)
	}
	// The buyer's session is over: it is a new visitor, and the room is full.
	if _, admitted := buyer.place("/"); admitted {
		t.Fatal("revoked buyer got in again")
	}
}

func TestLiveSessionExpiryAdmitsTheHead(t *testing.T) {
	startLive(t, uniqueRoom(t), "capacity 1\n\t\tsession_ttl 10s")
	first, second := newVisitor(t), newVisitor(t)
	first.place("/")
	if _, admitted := second.place("/"); admitted {
		t.Fatal("second visitor got in with capacity 1")
	}
	ws := second.socket("/")
	until(t, ws, "admitted", func(m queueAnswer) bool { return m.Type == "admitted" })
	if _, admitted := second.place("/"); !admitted {
		t.Fatal("told admitted, but stopped on the next request")
	}
	if _, admitted := first.place("/"); admitted {
		t.Fatal("the expired visitor still got in")
	}
}

// A reload (POST /load) keeps every waiter's place and every admitted visitor's slot;
// open WebSockets are closed with a "service restart" code so the page reconnects.
func TestLiveReloadKeepsPositions(t *testing.T) {
	room := uniqueRoom(t)
	startLive(t, room, "capacity 1")
	admitted := newVisitor(t)
	admitted.place("/")
	waiters := make([]*visitor, 5)
	for i := range waiters {
		waiters[i] = newVisitor(t)
		waiters[i].place("/")
	}
	ws := waiters[2].socket("/")
	next(t, ws)

	startLive(t, room, "capacity 1\n\t\tstatus_code 202")

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for {
		_, _, err := ws.Read(ctx)
		if err == nil {
			continue // a position sent before the reload
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.StatusServiceRestart {
			t.Fatalf("socket ended with %v, want close 1012 (service restart)", err)
		}
		break
	}
	for i, v := range waiters {
		if q, _ := v.place("/"); q.Position != i+1 {
			t.Fatalf("after reload waiter %d is at %d", i+1, q.Position)
		}
	}
	if code, _, _ := waiters[0].get("/", "application/json"); code != http.StatusAccepted {
		t.Fatalf("new status_code not applied after reload: %d", code)
	}
	if _, ok := admitted.place("/"); !ok {
		t.Fatal("admitted visitor lost the slot across the reload")
	}
}

// Behind a trusted proxy the per-address caps count the client Caddy determined
// (trusted_proxies and X-Forwarded-For), not the proxy: two clients behind one proxy
// have a budget each, and one of them is capped on its own.
func TestLivePerIPCapsBehindTrustedProxy(t *testing.T) {
	room := uniqueRoom(t)
	tester := caddytest.NewTester(t)
	tester.InitServer(liveGlobals("\tservers {\n\t\ttrusted_proxies static 127.0.0.0/8\n\t}\n")+fmt.Sprintf(`
http://localhost:%d {
	waiting_room {
		name %s
		capacity 1
		max_joins_per_ip 2 1m
	}
	respond "upstream {path}"
}
`, livePort, room), "caddyfile")
	join := func(client string) int {
		req, _ := http.NewRequest(http.MethodGet, liveBase+"/", nil)
		req.Header.Set("Accept", "application/json")
		req.Header.Set("X-Forwarded-For", client)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	// Each call is a new visitor (no cookie jar): two joins per client, then 429.
	var codes []int
	for _, client := range []string{"203.0.113.1", "203.0.113.1", "203.0.113.2", "203.0.113.2", "203.0.113.1", "203.0.113.2"} {
		codes = append(codes, join(client))
	}
	want := []int{http.StatusOK, http.StatusOK, http.StatusOK, http.StatusOK, http.StatusTooManyRequests, http.StatusTooManyRequests}
	if fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Fatalf("answers to two clients behind one trusted proxy: %v, want %v", codes, want)
	}
}
