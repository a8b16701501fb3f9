package queue

import (
	"context"
	"time"
)

// A Holder is a Store that keeps connected waiters present without hearing from each
// of them again and again. A hub holds the waiters whose WebSockets it has (Hold, once
// per connection) and renews one lease for all of them (Hold with no ids, at least
// every heartbeat interval); a waiter it holds counts as heard from at the lease's
// last renewal. When the hub lets a waiter go (Release) the waiter is heard from then,
// and away after QueueTTL of silence like anyone. When the hub's instance dies its
// lease stops, and its waiters go away QueueTTL after the last renewal.
//
// Per waiter this is one call when the socket opens and one when it closes, where
// hearing each waiter every interval is a call per waiter per interval: on one Redis
// holding a million waiters, the difference between a few hundred commands a second
// and a few hundred thousand.
type Holder interface {
	// Hold marks the waiters ids as held by this instance, heard from at now (an away
	// one is back, but a no-show queued again and away, which it leaves as it is: see
	// Store.Listen), and renews this instance's lease at now. Unknown ids are ignored.
	Hold(ctx context.Context, ids []VisitorID, now time.Time) error
	// Release ends this instance's hold on ids (a waiter now held by another instance
	// stays held there), hearing from them at now.
	Release(ctx context.Context, ids []VisitorID, now time.Time) error
}
