package caddytest

import (
	"net/http"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// newCookielessDevice is a client logged in as account that keeps no cookie: curl
// with the account header and no cookie jar.
func newCookielessDevice(account string) *guest {
	return &guest{client: &http.Client{Transport: accountTransport{account, fleetTransport}, Timeout: eventDeadline}}
}

// TestMultiKeyWithoutCookieEnds: two caddy processes on one Redis, rooms of one slot
// keyed on the account header, and an account whose client never sends the room's
// cookie, asking again and again. Its session ends at session_max, and at a revoke
// made through the other instance, as a cookie's does: the instance that let it in
// lets it in again only until its next check of the session with the store
// (queue.TouchEvery), never for as long as it keeps asking.
func TestMultiKeyWithoutCookieEnds(t *testing.T) {
	t.Parallel() // its own fleet and Redis, and most of its time waiting on the clock: beside the others like it
	srv := testredis.Start(t)
	maxRoom, revokeRoom := uniqueRoom(t), uniqueRoom(t)
	const sessionMax = 12 * time.Second
	f := startFleet(t, 2, func(int) string {
		return roomBlock(maxRoom, "/max*", 1, "redis redis://"+srv.Addr,
			"key {http.request.header.X-Account}", "session_ttl 1m", "session_max 12s") +
			roomBlock(revokeRoom, "/revoke*", 1, "redis redis://"+srv.Addr,
				"key {http.request.header.X-Account}", "session_ttl 1m")
	})
	a, b := f.nodes[0], f.nodes[1]

	t.Run("session_max", func(t *testing.T) {
		sticky, waiter := newCookielessDevice("acct-sticky"), newGuest()
		if _, ok, err := sticky.place(a.base, "/max"); err != nil || !ok {
			t.Fatalf("the sticky account not admitted: %v", err)
		}
		if _, ok, err := waiter.place(a.base, "/max"); err != nil || ok {
			t.Fatalf("the waiter not queued: %v", err)
		}
		// Once a second, as the curl loop: the account without a cookie, and the
		// waiter behind it with its own, until two throttle windows after the waiter
		// got in.
		var waiterIn time.Time
		asked, letIn, both := 0, 0, 0
		for waiterIn.IsZero() || time.Since(waiterIn) < 2*queue.TouchEvery {
			if asked > int((sessionMax+4*queue.TouchEvery)/time.Second) {
				t.Fatalf("the waiter was not let in within %d s", asked)
			}
			_, stickyIn, err := sticky.place(a.base, "/max")
			if err != nil {
				t.Fatal(err)
			}
			_, ok, err := waiter.place(a.base, "/max")
			if err != nil {
				t.Fatal(err)
			}
			asked++
			if stickyIn {
				letIn++
			}
			if ok && waiterIn.IsZero() {
				waiterIn = time.Now()
			}
			if ok && stickyIn {
				both++
			}
			time.Sleep(time.Second)
		}
		t.Logf("the cookie-less account was let in %d of %d times, %d of them with the waiter inside", letIn, asked, both)
		if limit := int(queue.TouchEvery/time.Second) + 1; both > limit {
			t.Fatalf("two inside a room of one: the cookie-less account let in %d times after the waiter got in, more than one throttle window (%d)", both, limit)
		}
	})

	t.Run("revoke on another instance", func(t *testing.T) {
		sticky, waiter := newCookielessDevice("acct-sticky"), newGuest()
		if _, ok, err := sticky.place(a.base, "/revoke"); err != nil || !ok {
			t.Fatalf("the sticky account not admitted on %s: %v", a.name, err)
		}
		if _, ok, err := waiter.place(a.base, "/revoke"); err != nil || ok {
			t.Fatalf("the waiter not queued: %v", err)
		}
		if _, ok, err := sticky.place(a.base, "/revoke"); err != nil || !ok {
			t.Fatalf("the sticky account not let in again on %s: %v", a.name, err)
		}
		revoked := time.Now() // a confirmed the session at most this late
		if _, body, err := sticky.get(b.base, "/revoke/done", ""); err != nil || body != "done" {
			t.Fatalf("the shop's revoke through %s: %q %v", b.name, body, err)
		}
		waitFor(t, "the waiter admitted to the freed slot", func() bool {
			_, ok, err := waiter.place(a.base, "/revoke")
			return err == nil && ok
		})
		const every = 100 * time.Millisecond
		passed, refused, passedAfterRefusal := 0, 0, 0
		for time.Since(revoked) < 2*queue.TouchEvery {
			_, ok, err := sticky.place(a.base, "/revoke")
			switch {
			case err != nil:
				t.Fatalf("the sticky account on %s: %v", a.name, err)
			case ok && refused > 0:
				passedAfterRefusal++
			case ok:
				passed++
			default:
				refused++
			}
			time.Sleep(every)
		}
		t.Logf("after the revoke through %s, %s let the cookie-less account in %d times, then refused it %d times", b.name, a.name, passed, refused)
		if refused == 0 || passedAfterRefusal > 0 {
			t.Fatalf("%s let the revoked account in %d times after refusing it %d times", a.name, passedAfterRefusal, refused)
		}
		if limit := int(queue.TouchEvery/every) + 1; passed > limit {
			t.Fatalf("%s let the revoked account in %d times, more than one throttle window (%d requests)", a.name, passed, limit)
		}
	})
	f.requireUp()
}
