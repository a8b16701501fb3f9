package room

import (
	"context"

	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// followLogIn gives a keyed request's key the place its cookie holds when that place
// was taken without a key (tok is not Keyed: a key's cookie never follows another
// key, or a shared computer would hand one person's place to the next), and the key
// holds none yet; and reports whether it did. The place moves as a hand-off's does,
// in one store step that refuses when the key already holds a place (two devices
// logging in at once: one moves its place, the other finds it): the same ticket and
// position, or the same admitted session. A visitor let in before logging in is not
// sent back to the line, and nobody gets a second place: the key holds one, and the
// cookie's id is marked moved. When the key already holds a place, that place is the
// visitor's, and the cookie's lapses as an abandoned one does.
func (rm *Room) followLogIn(ctx context.Context, v *Visit, d *Decision, keys *token.Keyring, tok token.Token) bool {
	if tok.State == queue.Admitted && d.Settings.SessionOver(tok.Since, v.Now) {
		return false // a session past session_max is over, whoever holds it
	}
	st, moved, err := rm.cfg.Store.Move(ctx, tok.ID, d.keyID, v.Now, rm.limitsOf(d.Settings))
	if err != nil {
		rm.storeError("move", err)
		rm.degrade(d)
		return true
	}
	if !moved {
		return false
	}
	rm.forgetTouched(tok.ID)
	rm.hub.Lose(tok.ID)
	if c := rm.cfg.Logger.Check(zap.DebugLevel, "place followed its visitor's log-in"); c != nil {
		c.Write(zap.String("room", rm.cfg.Name), zap.Stringer("from", tok.ID), zap.Stringer("visitor", d.keyID), zap.Stringer("state", st.State))
	}
	now := v.Now
	if st.State == queue.Admitted { // a session moved, as the store counts it
		rm.cfg.Metrics.AdmittedBy(queue.ByReason{queue.ReasonHandoff: 1})
	}
	switch {
	case st.State == queue.Admitted && tok.State == queue.Queued:
		// Let in while it waited: this request is its arrival, as in decideQueued.
		rm.cfg.Metrics.Waited(now.Sub(tok.Since))
		rm.cfg.History.Wait(now, now.Sub(tok.Since))
		rm.admit(d, keys, token.Token{ID: d.keyID, Since: now, Pass: tok.Pass, Waited: now.Sub(tok.Since)}, now)
		rm.arrived(ctx, v, d.Settings, d.keyID)
		return true
	case st.State == queue.Admitted:
		rm.admit(d, keys, token.Token{ID: d.keyID, Since: tok.Since, Pass: tok.Pass, Waited: tok.Waited}, now)
		return true
	}
	rm.holdPlace(d, keys, d.keyID, tok.Since, now, tok.Pass)
	rm.queued(v, d, d.keyID, st, "", passNone)
	return true
}
