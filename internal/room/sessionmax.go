package room

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// ReasonSessionMax is what the answer to a visitor whose session reached session_max
// says ("reason" in JSON, the page's notice).
const ReasonSessionMax = "session_max"

// resumedSince is the start of tok's session as the store counts it, when the store
// holds the session as begun after the cookie says and, by that start, session_max
// has not run out: the memory store resumes its clocks after a restart, so the
// downtime counts against nobody, while the cookie's start is the wall clock's. The
// store is asked once a session, when the cookie says it is over; the cookie the
// visitor is given then carries the store's start.
func (rm *Room) resumedSince(ctx context.Context, s *settings.Snapshot, tok token.Token, now time.Time) (time.Time, bool) {
	st, err := rm.cfg.Store.Status(ctx, tok.ID, now)
	if err != nil || st.State != queue.Admitted || st.Since.Unix() <= tok.Since.Unix() || s.SessionOver(st.Since, now) {
		return time.Time{}, false
	}
	return st.Since, true
}

// sessionMaxLapsed reports whether a session the store no longer holds under s most likely
// ended at session_max. The cookie's admission time is when the visitor came in after
// the store admitted them from the line (the reload after the push, or the next poll),
// so the store's own session_max ends the session up to that lag earlier than the
// cookie says.
func sessionMaxLapsed(s *settings.Snapshot, since, now time.Time) bool {
	lag := time.Duration(s.RefreshSeconds())*time.Second + StepEvery
	return s.SessionMax > 0 && now.Sub(since) >= s.SessionMax-lag
}

// endSession ends an admitted visitor's session at session_max: the slot is freed now
// (the store's step would free it within a tick anyway), and the caller treats the
// request as a new visitor's.
func (rm *Room) endSession(ctx context.Context, id queue.VisitorID) {
	rm.forgetTouched(id)
	if _, err := rm.cfg.Store.Leave(ctx, id); err != nil {
		rm.storeError("ending session at session_max", err)
		return
	}
	rm.kick()
	if c := rm.cfg.Logger.Check(zap.DebugLevel, "session reached session_max"); c != nil {
		c.Write(zap.String("room", rm.cfg.Name), zap.Stringer("visitor", id))
	}
}

// Revoke frees id's slot now and admits the next waiter: the upstream said the
// visitor is done (after a checkout, say).
func (rm *Room) Revoke(ctx context.Context, id queue.VisitorID) {
	rm.forgetTouched(id)
	if _, err := rm.cfg.Store.Leave(ctx, id); err != nil {
		rm.storeError("revoke", err)
		return
	}
	rm.kick()
	if c := rm.cfg.Logger.Check(zap.DebugLevel, "session revoked by upstream"); c != nil {
		c.Write(zap.String("room", rm.cfg.Name), zap.Stringer("visitor", id))
	}
}
