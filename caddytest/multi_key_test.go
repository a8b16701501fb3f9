package caddytest

import (
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// accountTransport sends the account header a shop (or a trusted proxy) would set on
// every request of a logged-in person.
type accountTransport struct {
	account string
	next    http.RoundTripper
}

func (a accountTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Account", a.account)
	return a.next.RoundTrip(r)
}

// newDevice is one device (its own cookie jar) of the person logged in as account.
func newDevice(account string) *guest {
	jar, _ := cookiejar.New(nil)
	return &guest{client: &http.Client{Jar: jar, Transport: accountTransport{account, fleetTransport}, Timeout: eventDeadline}}
}

// TestMultiKeyOnePlace: three caddy processes on one Redis, a room keyed on the
// account header. A person's devices, each with its own cookies and each on another
// instance, hold one place (the same visitor, the same position), are admitted once
// when its turn comes, and share the admitted session, while another account behind
// them stays in line.
func TestMultiKeyOnePlace(t *testing.T) {
	srv := testredis.Start(t)
	room := uniqueRoom(t)
	f := startFleet(t, 3, func(int) string {
		return roomBlock(room, "/shop*", 1, "redis redis://"+srv.Addr,
			"key {http.request.header.X-Account}", "session_ttl 1h")
	})
	a, b, c := f.nodes[0], f.nodes[1], f.nodes[2]
	holder := newGuest()
	if _, ok, err := holder.place(a.base, "/shop"); err != nil || !ok {
		t.Fatalf("the first visitor was not admitted: %v", err)
	}
	laptop, phone, tablet, bob := newDevice("alice"), newDevice("alice"), newDevice("alice"), newDevice("bob")
	queuedAt := func(g *guest, nd *node, want int) string {
		t.Helper()
		q, admitted, err := g.place(nd.base, "/shop")
		if err != nil || admitted || q.Position != want {
			t.Fatalf("%s: admitted=%v %+v %v, want queued at %d", nd.name, admitted, q, err, want)
		}
		id, err := g.visitorID(nd.base, room)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	alice := queuedAt(laptop, a, 1)
	queuedAt(bob, a, 2)
	if id := queuedAt(phone, b, 1); id != alice {
		t.Fatalf("alice's phone on %s is visitor %x, her laptop %x", b.name, id, alice)
	}
	if id := queuedAt(tablet, c, 1); id != alice {
		t.Fatalf("alice's tablet on %s is visitor %x, her laptop %x", c.name, id, alice)
	}
	if q, _, err := bob.place(b.base, "/shop"); err != nil || q.Position != 2 || q.Waiting != 2 {
		t.Fatalf("bob on %s: %+v %v, want at 2 of 2 waiting (alice counted once)", b.name, q, err)
	}

	// The holder checks out: alice's turn, once, on every device.
	if _, body, err := holder.get(a.base, "/shop/done", ""); err != nil || body != "done" {
		t.Fatalf("checkout: %q %v", body, err)
	}
	for i, dev := range []struct {
		g  *guest
		nd *node
	}{{phone, c}, {laptop, b}, {tablet, a}} {
		eventually(t, fmt.Sprintf("alice's device %d to be let in on %s", i, dev.nd.name), func() (bool, string) {
			q, admitted, err := dev.g.place(dev.nd.base, "/shop")
			return err == nil && admitted, fmt.Sprintf("%+v %v", q, err)
		})
	}
	for _, nd := range f.nodes {
		if q, admitted, err := bob.place(nd.base, "/shop"); err != nil || admitted || q.Position != 1 || q.Active != 1 {
			t.Fatalf("bob on %s while alice is in on three devices: admitted=%v %+v %v, want first in line, one active", nd.name, admitted, q, err)
		}
	}
}
