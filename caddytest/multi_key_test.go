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

// TestMultiKeyLogInKeepsThePlace: two caddy processes on one Redis, a room keyed on
// the account header, in front of a shop whose log-in is behind it. A waiter who logs
// in keeps its place (the same position, now its key's, on another instance), and a
// visitor let in who logs in stays in; the line behind them neither moves up nor
// grows.
func TestMultiKeyLogInKeepsThePlace(t *testing.T) {
	srv := testredis.Start(t)
	room := uniqueRoom(t)
	f := startFleet(t, 2, func(int) string {
		return roomBlock(room, "/shop*", 1, "redis redis://"+srv.Addr,
			"key {http.request.header.X-Account}", "session_ttl 1h")
	})
	a, b := f.nodes[0], f.nodes[1]
	holder, waiter, behind := newGuest(), newGuest(), newGuest()
	if _, ok, err := holder.place(a.base, "/shop"); err != nil || !ok {
		t.Fatalf("the first visitor was not admitted: %v", err)
	}
	for i, g := range []*guest{waiter, behind} {
		if q, admitted, err := g.place(a.base, "/shop"); err != nil || admitted || q.Position != i+1 {
			t.Fatalf("visitor %d: admitted=%v %+v %v, want queued at %d", i, admitted, q, err, i+1)
		}
	}
	before, err := waiter.visitorID(a.base, room)
	if err != nil {
		t.Fatal(err)
	}

	logIn := func(g *guest, account string) { g.client.Transport = accountTransport{account, fleetTransport} }
	logIn(waiter, "alice")
	q, admitted, err := waiter.place(b.base, "/shop")
	if err != nil || admitted || q.Position != 1 || q.Waiting != 2 {
		t.Fatalf("the waiter logged in, on %s: admitted=%v %+v %v, want still first of 2", b.name, admitted, q, err)
	}
	alice, err := waiter.visitorID(b.base, room)
	if err != nil || alice == before {
		t.Fatalf("the waiter logged in is visitor %x (%v), was %x: want the key's", alice, err, before)
	}
	phone := newDevice("alice")
	if q, _, err := phone.place(a.base, "/shop"); err != nil || q.Position != 1 || q.Waiting != 2 {
		t.Fatalf("alice's phone on %s: %+v %v, want her place, first of 2", a.name, q, err)
	}
	if id, err := phone.visitorID(a.base, room); err != nil || id != alice {
		t.Fatalf("alice's phone is visitor %x (%v), her first device %x", id, err, alice)
	}

	logIn(holder, "carol")
	if q, admitted, err := holder.place(b.base, "/shop"); err != nil || !admitted {
		t.Fatalf("the visitor let in, logged in on %s: admitted=%v %+v %v, want still in", b.name, admitted, q, err)
	}
	for _, nd := range f.nodes {
		if q, admitted, err := behind.place(nd.base, "/shop"); err != nil || admitted || q.Position != 2 || q.Active != 1 || q.Waiting != 2 {
			t.Fatalf("the visitor behind, on %s: admitted=%v %+v %v, want second of 2, one active", nd.name, admitted, q, err)
		}
	}
}
