package caddytest

import (
	"context"
	"slices"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// sendAs makes every request of the tab carry the account header, as a shop in front
// of the room (or its login proxy) sets it for a logged-in person; needs
// enableNetwork.
func (b *tab) sendAs(account string) {
	b.t.Helper()
	b.do(chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders,
			network.SetExtraHTTPHeadersParams{Headers: network.Headers{"X-Account": account}})
		return err
	}))
}

// Two devices of one person: two browsers, each with its own profile and cookies,
// logged in as one account, in a room of one slot that someone else holds. Both
// pages show the same place, first in line, one waiting; when the holder checks out
// both are let in on their turn, on the page they asked for, and the room counts
// one active visitor, admitted once.
func TestBrowserKeyTwoDevicesOnePlace(t *testing.T) {
	room := uniqueRoom(t)
	up := startBrowserSite(t, browserSite{room: room, options: "capacity 1\n\t\tkey {http.request.header.X-Account}\n\t\tsession_ttl 1h"})
	holder := newVisitor(t)
	if _, in := holder.place("/"); !in {
		t.Fatal("the first visitor was queued in an empty room")
	}

	const uri = "/tickets/7?seat=B4"
	laptop, phone := newBrowser(t), newBrowser(t)
	for _, b := range []*tab{laptop, phone} {
		b.enableNetwork()
		b.sendAs("alice@example.com")
		b.do(chromedp.Navigate(liveBase + uri))
		b.showing("wr-position", "1")
	}
	for _, b := range []*tab{laptop, phone} {
		b.showing("wr-waiting", "1")
	}
	if info := roomInfo(t, room); info.Active != 1 || info.Waiting != 1 {
		t.Fatalf("with both devices waiting the room has %d active, %d waiting; want 1 and 1", info.Active, info.Waiting)
	}

	if _, _, body := holder.get("/checkout", ""); body != "upstream GET /checkout" {
		t.Fatalf("checkout answered %q", body)
	}
	laptop.landedOn(uri)
	phone.landedOn(uri)
	info := roomInfo(t, room)
	if info.Active != 1 || info.Waiting != 0 || info.AdmittedTotal != 2 {
		t.Fatalf("with both devices in: %d active, %d waiting, %d admitted in all; want 1, 0, 2 (the holder and alice once)",
			info.Active, info.Waiting, info.AdmittedTotal)
	}
	if got := up.requests(uri); !slices.Equal(got, []string{"GET " + uri, "GET " + uri}) {
		t.Fatalf("the upstream saw %q, want the page once from each device", got)
	}
}
