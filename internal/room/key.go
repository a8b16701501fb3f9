package room

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// A room with `key` knows who a request is for (an account, from a header or an auth
// plugin's placeholder), and the visitor is that key: every browser, tab and device
// presenting it holds one place. The visitor's id derives from the key with the
// room's secret (token.Keyring.KeyedID), so every instance on one store agrees on it
// and the key is never stored. The store's Join of a known id is where it stands, so
// a keyed new arrival is the one Join an unkeyed one is, and a second device's first
// request finds the first device's place (queue.Status.Known).
//
// A cookie of another key is not honoured for the key: the request is the key's
// visitor. A place taken without a key follows its visitor's log-in instead
// (followLogIn): someone let in, or waiting, who then logs in keeps the place.

// keyOf derives the keyed visitor id of v into d, and reports false (d decided:
// KeyTooLong) when the key is too long to take. An empty key is no key.
func keyOf(v *Visit, d *Decision, keys *token.Keyring) bool {
	if v.Key == "" {
		return true
	}
	d.Keyed = true
	if len(v.Key) > token.MaxKey {
		d.Outcome = KeyTooLong
		return false
	}
	d.keyID, d.hasKeyID = keys.KeyedID(v.Key), true
	d.keyedPlace, d.hasKeyedPlace = d.keyID, true
	return true
}

// cookieFor reports whether a verified cookie tok is the request's visitor's: with a
// key, only the key's own.
func (d *Decision) cookieFor(tok token.Token) bool {
	return !d.hasKeyID || tok.ID == d.keyID
}

// newVisitorID is the id a request without a usable cookie joins with: its key's, or
// a fresh one.
func (d *Decision) newVisitorID() queue.VisitorID {
	if d.hasKeyID {
		return d.keyID
	}
	return queue.NewVisitorID()
}

// decideKeyed decides on a keyed request without a usable cookie when its key's
// visitor holds a place the request need not join for, and reports whether it did;
// if not, reason says whether the key's session ended at session_max.
//
// An admitted visitor this instance confirmed with the store within
// queue.TouchEvery is let in with no store call, and that confirmation is not
// renewed by it: were a request without the cookie to renew it, a client that never
// keeps the cookie would never be checked again, and no session_max, revoke, remove
// or reset would end its session. So it is asked again TouchEvery after the store
// last said, as a cookie's visitor is. Its cookie says when the key's session began,
// as the store said (keyedSince), so that session_max ends it on every device at the
// same time, from the cookie, and says so.
//
// Otherwise only where joining would not find the place it asks the store first:
// with proof_of_work on, a visitor who holds a place is not challenged again for it;
// in invite_only mode, a visitor let in is not turned away for coming without the
// pass; from an address at its max_joins_per_ip, a visitor who holds a place is not
// refused for it (two devices behind one home router). Everywhere else the join
// finds the place (keyedJoined), at no extra cost.
func (rm *Room) decideKeyed(ctx context.Context, v *Visit, d *Decision, keys *token.Keyring) (decided bool, reason string) {
	now, s, id := v.Now, d.Settings, d.keyID
	if rm.touchedRecently(id, now) {
		since := now
		if at, ok := rm.keyedSince.At(id); ok && !at.After(now) {
			since = at
		}
		if s.SessionOver(since, now) {
			rm.endSession(ctx, id)
			return false, ReasonSessionMax
		}
		rm.letIn(d, keys, token.Token{ID: id, Since: since, Waited: -1}, now)
		return true, ""
	}
	capped := false
	if cap := rm.cfg.PerIP; cap.MaxJoins > 0 {
		capped = rm.ips.full(v.Addr, now, cap.MaxJoins, cap.JoinWindow)
	}
	if s.ProofOfWork == 0 && s.Mode != queue.ModeInviteOnly && !capped {
		return false, ""
	}
	st, err := rm.cfg.Store.Status(ctx, id, now)
	if err != nil {
		rm.storeError("status", err)
		rm.degrade(d)
		return true, ""
	}
	switch {
	case st.State == queue.Admitted:
		return rm.keyedAdmitted(ctx, v, d, keys, st.Since), ""
	case st.State == queue.Queued && s.Mode != queue.ModeInviteOnly:
		// In invite_only mode a waiter stays only with its pass (invitedOut), which
		// the join with the pass finds again without spending a use.
		rm.holdPlace(d, keys, id, now, now, false)
		rm.queued(v, d, id, st, "", passNone)
		return true, ""
	}
	return false, ""
}

// keyedAdmitted lets a keyed visitor the store holds admitted in on this device: the
// touch keeps its session (and is its arrival, with arrive_ttl), and its new cookie
// counts nothing. since is when the store says the key's session began (zero when
// it cannot say), which the cookie carries, so that the device's session_max is the
// key's. It reports false when the session lapsed meanwhile: the visitor is new.
// The waiting page's socket is no arrival (keyedSocket).
func (rm *Room) keyedAdmitted(ctx context.Context, v *Visit, d *Decision, keys *token.Keyring, since time.Time) bool {
	if socketOwesArrival(v, d.Settings) {
		return rm.keyedSocket(ctx, v, d, keys, since)
	}
	active, err := rm.cfg.Store.Touch(ctx, d.keyID, v.Now)
	if err != nil {
		rm.storeError("touch", err)
		rm.degrade(d)
		return true
	}
	if !active {
		return false
	}
	if since.IsZero() || since.After(v.Now) {
		since = v.Now
	}
	rm.admit(d, keys, token.Token{ID: d.keyID, Since: since, Waited: -1}, v.Now)
	return true
}

// keyedSocket decides on the waiting page's socket of a key the store held
// admitted, as decideAdmittedSocket does for a cookie's: it asks where the key
// stands instead of touching it, since the touch is the arrival, and an account
// whose client only ever reopens the socket would otherwise hold its slot without
// coming to the shop. Still let in, it is told so; a no-show queued again is the
// waiter, not back (a socket alone is not coming back). It reports false when the
// session lapsed meanwhile, as keyedAdmitted does.
func (rm *Room) keyedSocket(ctx context.Context, v *Visit, d *Decision, keys *token.Keyring, since time.Time) bool {
	st, err := rm.cfg.Store.Listen(ctx, d.keyID, v.Now)
	if err != nil {
		rm.storeError("status", err)
		rm.degrade(d)
		return true
	}
	switch st.State {
	case queue.Admitted:
		if since.IsZero() || since.After(v.Now) {
			since = v.Now
		}
		rm.letIn(d, keys, token.Token{ID: d.keyID, Since: since, Waited: -1}, v.Now)
		return true
	case queue.Queued:
		rm.holdPlace(d, keys, d.keyID, v.Now, v.Now, false)
		rm.queued(v, d, d.keyID, st, "", passNone)
		return true
	}
	return false
}

// keyedJoined decides on a keyed request whose join found its key's visitor already
// there (st.Known): it is that visitor on another device, counted nowhere again, and
// the address's join is given back. It reports false when the admitted session the
// join found had lapsed (a session the admission step had yet to sweep): that
// visitor is let go, and the caller joins it anew. n counts the joins so far; past
// keyedRejoinLimit the store is not making sense, and the request is degraded.
func (rm *Room) keyedJoined(ctx context.Context, v *Visit, d *Decision, keys *token.Keyring, st queue.Status, pass bool, counted string, n int) bool {
	if n > keyedRejoinLimit {
		rm.degrade(d)
		return true
	}
	if st.State == queue.Admitted && !rm.keyedAdmitted(ctx, v, d, keys, st.Since) {
		if _, err := rm.cfg.Store.Leave(ctx, d.keyID); err != nil {
			rm.storeError("leave", err)
			rm.degrade(d)
			return true
		}
		return false
	}
	rm.ips.giveBack(counted, v.Now)
	if c := rm.cfg.Logger.Check(zap.DebugLevel, "keyed visitor on another device"); c != nil {
		c.Write(zap.String("room", rm.cfg.Name), zap.Stringer("visitor", d.keyID), zap.Stringer("state", st.State))
	}
	if st.State == queue.Queued {
		rm.holdPlace(d, keys, d.keyID, v.Now, v.Now, pass)
		rm.queued(v, d, d.keyID, st, "", passNone)
	}
	return true
}

// keyedSessionHolds reports whether tok, a key's admitted cookie presented without
// the key (a device that opened the key's hand-off code), is for the key's session
// the store holds now, rather than one the key had before: the key's id is the same
// for all its places, so only the time says which. The cookie's Since is at or after
// its session's admission (the admission, or the request that came in on it), to the
// second, and a later session of the key began after the earlier one ended. Such a
// device asks the store on every request: this instance's recent confirmation of the
// key may be of the key's new session, confirmed by its own devices. A store that
// cannot say is taken to hold it, as an admitted cookie passes in an outage.
func (rm *Room) keyedSessionHolds(ctx context.Context, v *Visit, tok token.Token) bool {
	st, err := rm.cfg.Store.Status(ctx, tok.ID, v.Now)
	if err != nil {
		rm.storeError("status", err)
		return true
	}
	return st.State != queue.Admitted || st.Since.IsZero() || tok.Since.Unix() >= st.Since.Unix()
}

// keyedRejoinLimit bounds the joins of one keyed request whose session keeps lapsing
// between its join and its touch: a race, never a loop.
const keyedRejoinLimit = 2

// full reports whether addr has used up its joins of the window at now, counting
// nothing.
func (c *ipCounters) full(addr string, now time.Time, max int, window time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.joins[addr]
	return w != nil && now.Sub(w.start) < window && w.n >= max
}
