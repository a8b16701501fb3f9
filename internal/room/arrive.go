package room

import (
	"context"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// arrive_ttl: a waiter admitted from the line holds its slot on the strength of its
// turn alone until it arrives, that is until it makes a request through the room
// that is not the waiting page's own WebSocket (a page load, the page's poll, the
// navigation the socket's "admitted" sets off). The store keeps who has not arrived,
// and its Touch is the arrival; Step gives back the slot of one who has not arrived
// within arrive_ttl and queues it again, away, where it goes first when it comes back
// (queue.Limits.ArriveTTL) with a request, once: missing that turn too loses the
// place. The socket alone does not bring it back (status), so a client that only
// ever reopens the socket has one turn. A visitor admitted at join has arrived: its
// request is the one that joined.

// arrived tells the store that the admitted waiter id has arrived: v, which found it
// admitted with its queued cookie (and was just given its admitted one), is a
// request through the room. The waiting page's socket is none: it is told and
// closed, and the navigation it sets off is the arrival, so that navigation must
// reach the store rather than pass on this instance's recent confirmation. A store
// error is only logged: at worst the slot is given back and the waiter, coming back,
// goes first.
func (rm *Room) arrived(ctx context.Context, v *Visit, s *settings.Snapshot, id queue.VisitorID) {
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

// socketOwesArrival says v is the waiting page's own socket, with arrive_ttl on: it
// must not be taken for the arrival however it comes (see decideAdmittedSocket).
// Another site's socket is refused later, and is left to the ordinary path.
func socketOwesArrival(v *Visit, s *settings.Snapshot) bool {
	return v.Socket && !v.CrossSite && s.ArriveTTL > 0
}

// decideAdmittedSocket decides on the waiting page's socket opened with an admitted
// cookie (the one an earlier socket was handed, say), and reports whether it did. It
// asks the store where the visitor stands rather than touching it: a touch is the
// arrival, and a client that only ever reopens the socket, keeping the cookies it is
// given, would otherwise hold its slot for as long as it kept at it without ever
// making a request through the room. Still let in, it is told so, and the
// navigation that follows must reach the store; a no-show queued again is the
// waiter back. Anything else (a session ended, a place moved) is left to the caller.
func (rm *Room) decideAdmittedSocket(ctx context.Context, v *Visit, d *Decision, keys *token.Keyring, tok token.Token) bool {
	st, err := rm.cfg.Store.Listen(ctx, tok.ID, v.Now)
	switch {
	case err != nil:
		// The cookie is verified: told it is in, the page navigates, and that request
		// is the arrival, or passes as an admitted visitor's does in an outage.
		rm.storeError("status", err)
		d.Outcome, d.Visitor, d.Waited = Admitted, tok.ID, tok.Waited
	case st.State == queue.Admitted:
		rm.admit(d, keys, tok, v.Now)
		rm.forgetTouched(tok.ID)
	case st.State == queue.Queued:
		rm.noShowBack(v, d, keys, tok, st)
	default:
		return false
	}
	return true
}

// decideNoShow decides on a visitor whose admitted cookie the store no longer
// confirms, in case it is a no-show queued again (its cookie came with the socket
// told of the admission, and the navigation came too late): it is the queued waiter
// back, not a new one. It reports whether it decided.
func (rm *Room) decideNoShow(ctx context.Context, v *Visit, d *Decision, keys *token.Keyring, tok token.Token) bool {
	if d.Settings.ArriveTTL <= 0 || v.Socket && v.CrossSite {
		return false
	}
	st, err := rm.status(ctx, v, tok.ID)
	if err != nil || st.State != queue.Queued {
		return false
	}
	rm.noShowBack(v, d, keys, tok, st)
	return true
}

// status asks the store where waiter id stands for request v: Listen for the
// waiting page's socket, Status for a page request. Only a page request brings a
// no-show queued again back: a socket alone is not coming back, so a client that
// only ever reopens it has its turn once (its socket is closed as a lost place's,
// and the page asks with a request).
func (rm *Room) status(ctx context.Context, v *Visit, id queue.VisitorID) (queue.Status, error) {
	if v.Socket {
		return rm.cfg.Store.Listen(ctx, id, v.Now)
	}
	return rm.cfg.Store.Status(ctx, id, v.Now)
}

// noShowBack decides on the no-show tok names, queued again (st): the waiter back.
func (rm *Room) noShowBack(v *Visit, d *Decision, keys *token.Keyring, tok token.Token, st queue.Status) {
	// The admitted cookie's Since is the admission; the wait began Waited before it.
	since := tok.Since
	if tok.Waited > 0 {
		since = since.Add(-tok.Waited)
	}
	rm.holdPlace(d, keys, tok.ID, since, v.Now, tok.Pass)
	rm.queued(v, d, tok.ID, st, "", passNone)
}
