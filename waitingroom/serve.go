package waitingroom

import (
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/push"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// ServeHTTP lets admitted visitors through and queues the rest.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	rm := h.room
	now := h.clock.Now()
	p := h.policyAt(now)
	v := h.visitOf(r) // the placeholders (placeholders.go)
	// A pass or a proof never goes upstream, whoever sends it (pass.go, proof.go).
	passText, proof := takePass(r), takeProof(r)
	if p.mode == queue.ModeSuspended || isPreflight(r) {
		return next.ServeHTTP(w, r) // the room is off, or no visitor asks: no cookie, nothing counted
	}
	keys := rm.keys.Load()
	if keys == nil {
		// No secret yet: the store has been down since start. Nobody can be verified.
		v.decided(visitUnavailable)
		return h.degraded(w, r, next)
	}

	var invitedBy token.Token // the cookie, when it holds a pass (see rejoinInvited)
	reason := ""              // why a known visitor is new again (sessionmax.go)
	if tok, ok := keys.Open(h.Cookie.Value(r), now); ok {
		if tok.Pass {
			invitedBy = tok
		}
		switch tok.State {
		case queue.Admitted:
			if sessionOver(p, tok.Since, now) {
				h.endSession(r, tok.ID)
				reason = reasonSessionMax
				break
			}
			if rm.touchedRecently(tok.ID, now) {
				v.admitted(tok.ID, tok.Waited)
				return h.passAdmitted(w, r, next, v, tok.ID, false)
			}
			active, err := rm.store.Touch(r.Context(), tok.ID, now)
			if err != nil {
				// The cookie is verified: an admitted visitor keeps passing in an outage,
				// and asks a hung store again only after TouchEvery, not on every request.
				rm.storeError("touch", err)
				rm.markTouched(tok.ID, now)
				v.admitted(tok.ID, tok.Waited)
				return h.passAdmitted(w, r, next, v, tok.ID, false)
			}
			if active {
				h.admit(w, r, keys, tok, now)
				v.admitted(tok.ID, tok.Waited)
				return h.passAdmitted(w, r, next, v, tok.ID, true)
			}
			// Session lapsed, revoked or removed: a new visitor, at the back.
			if h.sessionMaxLapsed(p, tok.Since, now) {
				reason = reasonSessionMax
			}
		case queue.Queued:
			if refusedSocket(w, r, v) {
				return nil
			}
			st, err := rm.store.Status(r.Context(), tok.ID, now)
			if err != nil {
				v.decided(visitUnavailable)
				return h.degraded(w, r, next)
			}
			if (st.State == queue.Admitted || st.State == queue.Queued) && h.invitedOut(r, tok, p) {
				v.decided(visitRejected)
				return h.serveRejected(w, r, p)
			}
			switch st.State {
			case queue.Admitted:
				if !rm.touchedRecently(tok.ID, now) {
					rm.metrics.wait.Observe(now.Sub(tok.Since).Seconds())
					rm.history.wait(now, now.Sub(tok.Since))
				}
				tok.Waited, tok.Since = now.Sub(tok.Since), now
				h.admit(w, r, keys, tok, now)
				v.admitted(tok.ID, tok.Waited)
				if push.IsWaitingSocket(r) {
					return rm.hub.ServeAdmitted(w, r)
				}
				return h.passAdmitted(w, r, next, v, tok.ID, true)
			case queue.Queued:
				h.holdPlace(w, r, keys, tok.ID, tok.Since, now, tok.Pass)
				v.queued(tok.ID, st.Position)
				return h.serveQueued(w, r, tok.ID, st, p)
			}
			// The place was lost (queue_ttl): a new visitor, at the back.
		}
	}

	if refusedSocket(w, r, v) {
		return nil
	}
	invited := h.rejoinInvited(r, invitedBy) // pass.go
	passed := !invited && h.difficulty() > 0 && passOpens(keys, passText, now)
	// The per-address cap is the cheap refusal, so it comes before the proof's
	// once-only check: a proof answered 429 is not spent. A visitor then challenged
	// has not joined, so its join is given back (perip.go).
	counted := ""
	if cap := h.PerIP; cap != nil && cap.MaxJoins > 0 {
		addr := clientAddr(r)
		if !rm.ips.allowJoin(addr, now, cap.MaxJoins, time.Duration(cap.JoinWindow)) {
			v.decided(visitRejected)
			return tooMany(w, time.Duration(cap.JoinWindow))
		}
		counted = addr
	}
	done, clean, err := h.challenge(w, r, keys, now, v, next, proof, invited || passed) // proof.go
	if done {
		rm.ips.giveBack(counted, now)
		return err
	}
	id := queue.NewVisitorID()
	rm.drawLots(r.Context(), p) // an event's lottery comes before its first new arrival
	st, check, err := h.joinNew(r, keys, id, passText, invited, passed, now, p)
	if err != nil {
		rm.storeError("join", err)
		v.decided(visitUnavailable)
		return h.degraded(w, r, next)
	}
	if check == passSpent {
		rm.ips.giveBack(counted, now)
		v.decided(visitChallenge)
		return h.serveChallenge(w, r, keys, h.difficulty(), now)
	}
	if st.State == queue.Rejected {
		if c := h.logger.Check(zap.DebugLevel, "visitor turned away"); c != nil {
			c.Write(zap.String("room", h.Name), zap.String("mode", p.mode))
		}
		v.decided(visitRejected)
		return h.serveRejectedPass(w, r, p, check)
	}
	if st.State == queue.Admitted {
		rm.metrics.admitted.Inc()
		h.admit(w, r, keys, token.Token{ID: id, Since: now, Pass: invited || check == passValid}, now)
		v.admitted(id, 0)
		if clean {
			return h.seeClean(w, r)
		}
		return h.passAdmitted(w, r, next, v, id, true)
	}
	rm.metrics.queued.Inc()
	if c := h.logger.Check(zap.DebugLevel, "visitor queued"); c != nil {
		c.Write(zap.String("room", h.Name), zap.Stringer("visitor", id), zap.Int("position", st.Position))
	}
	h.holdPlace(w, r, keys, id, now, now, invited || check == passValid)
	v.queued(id, st.Position)
	if clean {
		return h.seeClean(w, r)
	}
	return h.serveJoined(w, r, id, st, p, check, reason)
}

// admit gives tok's visitor a fresh admitted cookie (admitted at tok.Since, having
// waited tok.Waited, with or without a pass) and records that its session was just
// confirmed with the store.
func (h *Handler) admit(w http.ResponseWriter, r *http.Request, keys *token.Keyring, tok token.Token, now time.Time) {
	tok.State, tok.Expires = queue.Admitted, now.Add(h.sessionTTL())
	var sealed [token.Text]byte
	h.Cookie.Set(w, r, keys.AppendSealed(sealed[:0], tok), tok.Expires)
	h.room.markTouched(tok.ID, now)
}

// queue gives waiter id (queued since, with a pass or not) a fresh queued cookie.
func (h *Handler) holdPlace(w http.ResponseWriter, r *http.Request, keys *token.Keyring, id queue.VisitorID, since, now time.Time, pass bool) {
	expires := now.Add(token.QueuedLife)
	var sealed [token.Text]byte
	h.Cookie.Set(w, r, keys.AppendSealed(sealed[:0], token.Token{State: queue.Queued, ID: id, Since: since, Expires: expires, Pass: pass, Waited: -1}), expires)
}

// passAdmitted hands the request on, watching the response for the upstream's revoke
// command; cookie says the room set its cookie on the response, which then never goes
// to a shared cache (sharedcache.go). The watcher lives in the request's visit when it
// has one, so an admitted request allocates one object for both.
func (h *Handler) passAdmitted(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, v *visit, id queue.VisitorID, cookie bool) error {
	var rw *revokeWatcher
	if v != nil {
		rw = &v.watcher
	} else {
		rw = new(revokeWatcher)
	}
	*rw = revokeWatcher{ResponseWriterWrapper: caddyhttp.ResponseWriterWrapper{ResponseWriter: w}, h: h, r: r, id: id, cookie: cookie}
	err := next.ServeHTTP(rw, r)
	if !rw.wroteHeader {
		// Nothing was written (an error, or a handler that wrote nothing): the command
		// still counts, and still must not reach the client.
		rw.obey()
		rw.keepCookie()
	}
	return err
}

// degraded serves a request the store could not decide on, as Fail says.
func (h *Handler) degraded(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if h.Fail == failOpen {
		return next.ServeHTTP(w, r)
	}
	return h.serveUnavailable(w, r)
}

// commandHeader is the response header an upstream sets to steer the room.
const commandHeader = "Waiting-Room-Command"

// revokeWatcher ends the visitor's session when the upstream answers with
// "Waiting-Room-Command: revoke" (after a checkout, say), and never lets that header
// reach the client.
type revokeWatcher struct {
	caddyhttp.ResponseWriterWrapper // by value: one allocation per admitted request, not two
	h                               *Handler
	r                               *http.Request
	id                              queue.VisitorID
	wroteHeader                     bool
	cookie                          bool // the response carries the room's Set-Cookie
}

func (rw *revokeWatcher) WriteHeader(code int) {
	if rw.wroteHeader {
		return
	}
	if code < http.StatusOK && code != http.StatusSwitchingProtocols {
		rw.ResponseWriter.WriteHeader(code) // informational: the final header comes later
		return
	}
	rw.wroteHeader = true
	rw.obey()
	rw.keepCookie()
	rw.ResponseWriter.WriteHeader(code)
}

// obey carries out and strips the upstream's command header, if any. It runs on every
// admitted request, so it indexes the header map with the canonical name (what Set,
// Add and the reverse proxy store) instead of Get, which canonicalizes the name again
// each time: that was a tenth of the admitted hot path.
func (rw *revokeWatcher) obey() {
	hdr := rw.ResponseWriter.Header()
	values, ok := hdr[commandHeader]
	if !ok {
		return
	}
	delete(hdr, commandHeader)
	if len(values) > 0 && strings.EqualFold(strings.TrimSpace(values[0]), "revoke") {
		rw.h.revoke(rw.r, rw.id)
		rw.h.Cookie.Set(rw.ResponseWriter, rw.r, nil, time.Time{})
		rw.cookie = true
	}
}

// keepCookie keeps a response that carries the room's cookie from shared caches.
func (rw *revokeWatcher) keepCookie() {
	if rw.cookie {
		keepFromSharedCaches(rw.ResponseWriter.Header())
	}
}

func (rw *revokeWatcher) Write(p []byte) (int, error) {
	if !rw.wroteHeader {
		rw.WriteHeader(http.StatusOK)
	}
	return rw.ResponseWriter.Write(p)
}

// ReadFrom keeps the wrapper's fast path (sendfile) but sees the header first.
func (rw *revokeWatcher) ReadFrom(src io.Reader) (int64, error) {
	if !rw.wroteHeader {
		rw.WriteHeader(http.StatusOK)
	}
	return rw.ResponseWriterWrapper.ReadFrom(src)
}

// revoke frees id's slot now and admits the next waiter.
func (h *Handler) revoke(r *http.Request, id queue.VisitorID) {
	h.room.forgetTouched(id)
	if _, err := h.room.store.Leave(r.Context(), id); err != nil {
		h.room.storeError("revoke", err)
		return
	}
	h.room.kick()
	if c := h.logger.Check(zap.DebugLevel, "session revoked by upstream"); c != nil {
		c.Write(zap.String("room", h.Name), zap.Stringer("visitor", id))
	}
}
