package waitingroom

import (
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// reasonSessionMax is what the answer to a visitor whose session reached session_max
// says ("reason" in JSON, the page's notice).
const reasonSessionMax = "session_max"

// sessionOver reports whether the admitted session that began at since has reached
// session_max: decided from the cookie alone, so the admitted hot path makes no store
// call for it.
func sessionOver(p policy, since, now time.Time) bool {
	return p.sessionMax > 0 && now.Sub(since) >= p.sessionMax
}

// sessionMaxLapsed reports whether a session the store no longer holds most likely
// ended at session_max. The cookie's admission time is when the visitor came in after
// the store admitted them from the line (the reload after the push, or the next poll),
// so the store's own session_max ends the session up to that lag earlier than the
// cookie says.
func (h *Handler) sessionMaxLapsed(p policy, since, now time.Time) bool {
	lag := time.Duration(h.refreshSeconds())*time.Second + stepEvery
	return p.sessionMax > 0 && now.Sub(since) >= p.sessionMax-lag
}

// endSession ends an admitted visitor's session at session_max: the slot is freed now
// (the store's step would free it within a tick anyway), and the caller treats the
// request as a new visitor's.
func (h *Handler) endSession(r *http.Request, id queue.VisitorID) {
	rm := h.room
	rm.forgetTouched(id)
	if _, err := rm.store.Leave(r.Context(), id); err != nil {
		rm.storeError("ending session at session_max", err)
		return
	}
	rm.kick()
	if c := h.logger.Check(zap.DebugLevel, "session reached session_max"); c != nil {
		c.Write(zap.String("room", h.Name), zap.Stringer("visitor", id))
	}
}
