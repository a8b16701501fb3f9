package waitingroom

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/capacity"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/push"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// ServeHTTP turns the request into the facts the room decides on, and the room's
// decision into the response.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if page.IsDrawRequest(r.URL.Path, h.drawPath) { // public: no cookie read or set, nobody counted
		if err := page.AnswerDraw(w, r, h.drawPath, h.lang(r), h.room); err != nil {
			return caddyhttp.Error(http.StatusServiceUnavailable, err)
		}
		return nil
	}
	v := h.visitOf(r) // the placeholders (placeholders.go)
	var facts room.Visit
	h.factsOf(r, &facts)
	var d room.Decision // on the stack: the hot path allocates nothing for it
	h.room.Decide(r.Context(), &facts, &d)
	v.decided(&d)
	if cookie := d.Cookie(); cookie != nil {
		h.Cookie.Set(w, r, cookie, d.CookieExpires)
	}
	return h.answer(w, r, next, v, &facts, &d)
}

// factsOf reads what the room decides on from r. What a request carries of the
// room's own (a pass, a proof, a hand-off code) is taken out of it: it never goes
// upstream, whoever sends it (token.TakePass and the others).
func (h *Handler) factsOf(r *http.Request, facts *room.Visit) {
	proof := token.TakeProof(r)
	handoff, handoffInQuery := token.TakeHandoff(r)
	socket := push.IsWaitingSocket(r)
	*facts = room.Visit{
		Now:            h.clock.Now(),
		Cookie:         h.Cookie.Value(r),
		Pass:           token.TakePass(r),
		Proof:          proof.Text,
		ProofInAddress: proof.InQuery,
		Socket:         socket,
		Preflight:      page.IsPreflight(r),
		Page:           (proof.InQuery || handoffInQuery) && !socket && page.IsPageLoad(r),
		Handoff:        handoff,
		HandoffNew:     token.AsksHandoff(r),
		Key:            h.keyOf(r),
	}
	switch {
	case socket:
		facts.CrossSite = page.CrossOrigin(r)
	case facts.HandoffNew || handoffInQuery:
		facts.CrossSite = page.FromAnotherSite(r)
	}
	if h.PerIP != nil {
		facts.Addr = clientAddr(r)
	}
}

// keyOf resolves the room's key for r, "" when the room has none or the placeholder
// is empty for r. It costs nothing when the room has no key.
func (h *Handler) keyOf(r *http.Request) string {
	if h.Key == "" {
		return ""
	}
	repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if !ok || repl == nil {
		return ""
	}
	key := repl.ReplaceAll(h.Key, "")
	h.keyCheck.See(r.Header, key)
	return key
}

// clientAddr is the request's client address as Caddy determined it (after
// trusted_proxies), or the peer address.
func clientAddr(r *http.Request) string {
	if ip, ok := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string); ok && ip != "" {
		return ip
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// answer turns the room's decision d on the request into its response.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, v *visit, facts *room.Visit, d *room.Decision) error {
	switch d.Outcome {
	case room.Through:
		return next.ServeHTTP(w, r) // the room is off, or no visitor asks: no cookie, nothing counted
	case room.Admitted:
		return h.passAdmitted(w, r, next, v, d.Visitor, d.Cookie() != nil, facts.Now)
	case room.CleanRedirect:
		return h.seeClean(w, r)
	case room.TellAdmitted:
		return h.room.TellAdmitted(w, r)
	case room.WaitingSocket:
		refused, err := h.room.ServeSocket(w, r, d, facts.Addr)
		if refused {
			return tooMany(w, time.Duration(d.Settings.RefreshSeconds())*time.Second)
		}
		return err
	case room.HandoffCode:
		return h.serveHandoff(w, r, d)
	case room.HandoffBusy:
		return handoffBusy(w)
	case room.Queued, room.Moved:
		return h.respond(w, r, h.StatusCode, h.room.Tell(d, facts.Now), d.Settings)
	case room.Challenged:
		return h.serveChallenge(w, r, d.Challenge, d.Difficulty)
	case room.Rejected:
		return h.respond(w, r, h.RejectStatusCode, h.room.Tell(d, facts.Now), d.Settings)
	case room.CrossSiteRefused:
		w.Header().Set("Cache-Control", "no-store")
		what := "cross-origin WebSocket refused"
		if d.CrossSiteHandoff {
			what = "cross-site hand-off request refused"
		}
		http.Error(w, what, http.StatusForbidden)
		return nil
	case room.TooMany:
		return tooMany(w, d.RetryAfter)
	case room.KeyTooLong:
		return page.KeyTooLong(w, r, h.Name)
	case room.Degraded:
		if h.Fail == failOpen {
			return next.ServeHTTP(w, r)
		}
	}
	// Degraded and failing closed: the store could not decide.
	return h.respond(w, r, http.StatusServiceUnavailable, h.room.Tell(d, facts.Now), d.Settings)
}

// passAdmitted hands the request on, watching the response for the upstream's revoke
// command and timing it for the adaptive capacity (from when the shop had the whole
// request to its header: see measure); cookie says the room set its cookie on the
// response, which then never goes to a shared cache (page.KeepFromSharedCaches). The watcher,
// and the request body's watcher with it, live in the request's visit when it has
// one, so an admitted request allocates one object for all three (none more for a
// body).
func (h *Handler) passAdmitted(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler, v *visit, id queue.VisitorID, cookie bool, start time.Time) error {
	var rw *revokeWatcher
	if v != nil {
		rw = &v.watcher
	} else {
		rw = new(revokeWatcher)
	}
	*rw = revokeWatcher{ResponseWriterWrapper: caddyhttp.ResponseWriterWrapper{ResponseWriter: w}, h: h, r: r, id: id, cookie: cookie,
		body: capacity.Body{Clock: h.clock, Start: start}}
	body := r.Body
	// A request without content (a GET) has nothing to watch, whatever wraps its empty
	// body (Caddy's access log does): it is whole when handed on.
	if r.ContentLength != 0 && body != nil && body != http.NoBody {
		rw.body.ReadCloser = body
		r.Body = &rw.body
	}
	err := next.ServeHTTP(rw, r)
	r.Body = body
	if !rw.wroteHeader {
		// Nothing was written (an error, or a handler that wrote nothing): the command
		// still counts, and still must not reach the client.
		rw.obey()
		rw.keepCookie()
		if !clientClosed(err) {
			rw.measure(shopFailed(err))
		}
	}
	return err
}

// statusClientClosed is the status Caddy's proxy records for a request whose client
// went away before the answer ("499 client closed request").
const statusClientClosed = 499

// measure tells the room what the shop did with the request, answered now: its time
// to first byte, from when it had the whole request (capacity.Body), and whether it
// failed. Nothing is told when the shop is not the one who answered for it: the
// client went away (the proxy records 499 then), or reading the request's body
// failed, which the proxy answers 502 itself.
func (rw *revokeWatcher) measure(failed bool) {
	if ttfb, ok := rw.body.TTFB(rw.h.clock.Now()); ok && rw.r.Context().Err() == nil {
		rw.h.room.Served(rw.id, ttfb, failed)
	}
}

// clientClosed says the next handler's error is the client's going away (Caddy's
// proxy returns it with the status 499 when it does not write it).
func clientClosed(err error) bool {
	var he caddyhttp.HandlerError
	return err != nil && errors.As(err, &he) && he.StatusCode == statusClientClosed
}

// shopFailed says an error from the next handler is the shop's failure: any but one
// that carries a status under 500 (a file server's 404, a 403), which is an answer.
func shopFailed(err error) bool {
	if err == nil {
		return false
	}
	var he caddyhttp.HandlerError
	return !errors.As(err, &he) || he.StatusCode == 0 || he.StatusCode >= http.StatusInternalServerError
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
	cookie                          bool          // the response carries the room's Set-Cookie
	body                            capacity.Body // the request's, timed from when it was read
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
	if code != statusClientClosed {
		rw.measure(code >= http.StatusInternalServerError)
	}
	rw.obey()
	rw.keepCookie()
	rw.ResponseWriter.WriteHeader(code)
}

// obey carries out and strips the upstream's command header, if any. It runs on every
// admitted request, so it indexes the header map with the canonical name (what Set,
// Add and the reverse proxy store): Get would canonicalize the name again on every
// request.
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
		page.KeepFromSharedCaches(rw.ResponseWriter.Header())
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
func (h *Handler) revoke(r *http.Request, id queue.VisitorID) { h.room.Revoke(r.Context(), id) }
