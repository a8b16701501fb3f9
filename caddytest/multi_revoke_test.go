package caddytest

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// TestMultiRevokeReachesAnotherInstance: a visitor revoked on one instance (the
// upstream's checkout header) or removed there through the admin API is let through by
// another instance, which had confirmed the session, only until that instance's
// throttled check (queue.TouchEvery), and never after.
func TestMultiRevokeReachesAnotherInstance(t *testing.T) {
	t.Parallel() // its own fleet and Redis, and most of its time waiting on the clock: beside the others like it
	srv := testredis.Start(t)
	rooms := map[string]string{"revoke": uniqueRoom(t), "admin removal": uniqueRoom(t)}
	f := startFleet(t, 2, func(int) string {
		return roomBlock(rooms["revoke"], "/revoke*", 1, "redis redis://"+srv.Addr, "session_ttl 1m") +
			roomBlock(rooms["admin removal"], "/remove*", 1, "redis redis://"+srv.Addr, "session_ttl 1m")
	})
	a, b := f.nodes[0], f.nodes[1]
	for _, how := range []string{"revoke", "admin removal"} {
		room, shop := rooms[how], "/revoke"
		if how == "admin removal" {
			shop = "/remove"
		}
		buyer := newGuest()
		if _, ok, err := buyer.place(a.base, shop); err != nil || !ok {
			t.Fatalf("%s: buyer not admitted on %s: %v", how, a.name, err)
		}
		waiter := newGuest() // takes the freed slot, so the buyer cannot come back as new
		if _, ok, err := waiter.place(a.base, shop); err != nil || ok {
			t.Fatalf("%s: waiter not queued: %v", how, err)
		}
		if _, ok, err := buyer.place(b.base, shop); err != nil || !ok {
			t.Fatalf("%s: buyer not let through on %s: %v", how, b.name, err)
		}
		confirmed := time.Now() // b confirmed the session at most this late
		switch how {
		case "revoke":
			// The checkout clears the cookie of the tab that made it; another tab (or
			// a copy of the cookie) still holds it.
			old := buyer.cookie(a.base, room)
			if _, body, err := buyer.get(a.base, shop+"/done", ""); err != nil || body != "done" {
				t.Fatalf("checkout on %s: %q %v", a.name, body, err)
			}
			u, _ := url.Parse(a.base + "/")
			buyer.client.Jar.SetCookies(u, []*http.Cookie{{Name: "waiting_room_" + room, Value: old, Path: "/"}})
		case "admin removal":
			raw, err := buyer.visitorID(a.base, room)
			if err != nil {
				t.Fatal(err)
			}
			var id queue.VisitorID
			copy(id[:], raw)
			req, _ := http.NewRequest(http.MethodDelete, a.admin+"/waiting_room/"+room+"/visitors/"+id.String(), nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("DELETE on %s's admin API: %v %v", a.name, resp, err)
			}
			resp.Body.Close()
		}
		waitFor(t, "the waiter admitted to the freed slot", func() bool {
			_, ok, err := waiter.place(a.base, shop)
			return err == nil && ok
		})
		// The buyer keeps asking b, every tenth of a second, for two throttle windows.
		const every = 100 * time.Millisecond
		passed, refused, passedAfterRefusal := 0, 0, 0
		for time.Since(confirmed) < 2*queue.TouchEvery {
			_, ok, err := buyer.place(b.base, shop)
			switch {
			case err != nil:
				t.Fatalf("%s: buyer on %s: %v", how, b.name, err)
			case ok && refused > 0:
				passedAfterRefusal++
			case ok:
				passed++
			default:
				refused++
			}
			time.Sleep(every)
		}
		t.Logf("%s on %s: %s let the buyer through %d times, then refused %d times", how, a.name, b.name, passed, refused)
		if refused == 0 || passedAfterRefusal > 0 {
			t.Fatalf("%s: %s let the buyer through %d times after refusing %d times", how, b.name, passedAfterRefusal, refused)
		}
		if limit := int(queue.TouchEvery/every) + 1; passed > limit {
			t.Fatalf("%s: %s let the buyer through %d times, more than one throttle window (%d requests)", how, b.name, passed, limit)
		}
		if _, body, err := waiter.get(a.base, shop+"/done", ""); err != nil || body != "done" {
			t.Fatalf("the waiter's checkout: %q %v", body, err)
		}
	}
	f.requireUp()
}
