package queue

import "time"

// MovedKeep is how long Move's mark for the id that gave its place away is kept: as
// long as the place itself could live, a waiter's (Keep) or an admitted visitor's
// (SessionTTL, or SessionMax when longer), so the device that held it is told the
// place moved for as long as it could have been using it. After that the id is
// simply unknown, as any lapsed place's is.
func (l Limits) MovedKeep() time.Duration { return max(l.Keep(), l.SessionTTL, l.SessionMax) }

// A MoveAnnouncer is a Store shared by instances that announces every move: a
// waiting page's socket held by another instance than the one that made the move
// must be told its place is gone, and nothing else would tell it (its ticket is
// still in line, now held by the new id). A store for one instance need not be one:
// the instance that moves is the only one that holds sockets.
type MoveAnnouncer interface {
	// SubscribeMoved calls fn with the ids that gave their places away (Move), by
	// anyone sharing the store. Delivery is best effort, as Subscribe's; the page
	// that misses it learns of the move at its next poll or reconnection. The
	// returned function ends the subscription.
	SubscribeMoved(fn func(ids []VisitorID)) (cancel func())
}
