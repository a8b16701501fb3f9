package room

import (
	"context"
	"fmt"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// arrive_ttl: a waiter admitted from the line holds its slot on the strength of its
// turn alone until it arrives, that is until it makes a request through the room
// that is not the waiting page's own WebSocket (a page load, the page's poll, the
// navigation the socket's "admitted" sets off). The store keeps who has not arrived,
// and its Touch is the arrival; Step gives back the slot of one who has not arrived
// within arrive_ttl and queues it again, away, where it goes first when it comes back
// (queue.Limits.ArriveTTL), once: missing that turn too loses the place, so a client
// that only ever reopens the socket holds the head for two turns, not for ever. A
// visitor admitted at join has arrived: its request is the one that joined.

// CheckArrive refuses an arrive_ttl that would send back waiters who do arrive: a
// page without a socket learns of its admission at its next poll (every
// RefreshSeconds, from queue_ttl, give or take a tenth), so arrive_ttl must outlast
// two of them. 0 is off.
func CheckArrive(queueTTL, arriveTTL time.Duration) error {
	if arriveTTL == 0 {
		return nil
	}
	if floor := arriveFloor(queueTTL); arriveTTL < floor {
		return fmt.Errorf("arrive_ttl (%v) must be 0 or at least %v: two polls of a waiting page without a socket, with queue_ttl %v",
			arriveTTL, floor, queueTTL)
	}
	return nil
}

// arriveFloor is the least arrive_ttl under queueTTL (see CheckArrive).
func arriveFloor(queueTTL time.Duration) time.Duration {
	poll := time.Duration((&Settings{QueueTTL: queueTTL}).refreshSeconds()) * time.Second
	return max(MinArriveTTL, poll*2*11/10)
}

// arrived tells the store that the admitted waiter id has arrived: v, which found it
// admitted with its queued cookie (and was just given its admitted one), is a
// request through the room. The waiting page's socket is none: it is told and
// closed, and the navigation it sets off is the arrival, so that navigation must
// reach the store rather than pass on this instance's recent confirmation. A store
// error is only logged: at worst the slot is given back and the waiter, coming back,
// goes first.
func (rm *Room) arrived(ctx context.Context, v *Visit, s *Settings, id queue.VisitorID) {
	switch {
	case s.ArriveTTL <= 0:
	case v.Socket:
		rm.forgetTouched(id)
	default:
		if _, err := rm.cfg.Store.Touch(ctx, id, v.Now); err != nil {
			rm.storeError("arrival", err)
		}
	}
}

// decideNoShow decides on a visitor whose admitted cookie the store no longer
// confirms, in case it is a no-show queued again (its cookie came with the socket
// told of the admission, and the navigation came too late): it is the queued waiter
// back, not a new one. It reports whether it decided.
func (rm *Room) decideNoShow(ctx context.Context, v *Visit, d *Decision, keys *token.Keyring, tok token.Token) bool {
	if d.Settings.ArriveTTL <= 0 || v.Socket && v.CrossSite {
		return false
	}
	st, err := rm.cfg.Store.Status(ctx, tok.ID, v.Now)
	if err != nil || st.State != queue.Queued {
		return false
	}
	// The admitted cookie's Since is the admission; the wait began Waited before it.
	since := tok.Since
	if tok.Waited > 0 {
		since = since.Add(-tok.Waited)
	}
	rm.holdPlace(d, keys, tok.ID, since, v.Now, tok.Pass)
	rm.queued(v, d, tok.ID, st, "", passNone)
	return true
}
