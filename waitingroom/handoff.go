package waitingroom

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/push"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
)

// How a place moves to another device (docs/people-and-devices.md): the first device
// asks for a code with the header, and the second opens the link that carries it in
// the query. internal/room/handoff.go decides.
const (
	handoffParam  = "waiting_room_handoff"
	handoffHeader = "Waiting-Room-Handoff"
)

// takeHandoff returns the hand-off code the request presents in its query, if any,
// and removes it from the request, so the upstream never sees it; found says there
// was one (the address then is cleaned: seeClean).
func takeHandoff(r *http.Request) (code string, found bool) {
	raw, found := takeParam(r, handoffParam)
	if !found {
		return "", false
	}
	code, err := url.QueryUnescape(raw)
	if err != nil || code == "" {
		// An empty or badly escaped code is an invalid one, said so like any other,
		// and room.Visit's "" would mean none was presented.
		code = "?"
	}
	return code, true
}

// asksHandoff reports whether the request asks for a code for its own place, and
// removes the header, which is the room's and never the shop's.
func asksHandoff(r *http.Request) bool {
	vs, ok := r.Header[handoffHeader]
	if !ok {
		return false
	}
	delete(r.Header, handoffHeader)
	return len(vs) > 0 && strings.EqualFold(strings.TrimSpace(vs[0]), "new")
}

// fromAnotherSite reports whether r was sent from another site's page, or another
// origin of this site: a request for a code (which only the room's own page makes)
// and a link that presents one (which another site can make a visitor follow) are
// both refused then (internal/room/handoff.go). The browser says where a request
// comes from in Sec-Fetch-Site: anything but this origin ("same-origin") or the
// visitor's own hand ("none": a typed, pasted or scanned address) is another site.
// A browser that does not send it is judged by the Origin, else the Referer, it
// names. A request with none of these (not a browser: a JSON client) is not from
// another site; a web page cannot make a browser send such a request.
func fromAnotherSite(r *http.Request) bool {
	if push.CrossOrigin(r) {
		return true
	}
	if site, ok := r.Header["Sec-Fetch-Site"]; ok {
		s := strings.ToLower(strings.Join(site, ","))
		return s != "same-origin" && s != "none"
	}
	referer := r.Header.Get("Referer")
	if referer == "" {
		return false
	}
	u, err := url.Parse(referer)
	return err != nil || !strings.EqualFold(r.Host, u.Host)
}

// serveHandoff answers a request for a code with the code's link (handoffLink) and,
// when the link is short enough to draw (page.MaxQRLink), its QR code.
func (h *Handler) serveHandoff(w http.ResponseWriter, r *http.Request, d *room.Decision, status string) error {
	link := handoffLink(r, d.Handoff)
	page.SetHeader(w.Header(),
		field("Cache-Control", "no-store"),
		field("X-Content-Type-Options", "nosniff"),
		field("Referrer-Policy", "no-referrer"),
		field("Content-Type", "application/json"),
		field("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'"),
		field("Vary", "Accept, Accept-Language"))
	var qr string
	if len(link) <= page.MaxQRLink {
		var err error
		if qr, err = page.HandoffQR(link); err != nil {
			// The link alone still moves the place; a QR code is a convenience.
			h.logger.Warn("drawing a hand-off QR code", zap.String("room", h.Name), zap.Error(err))
		}
	}
	w.WriteHeader(http.StatusOK)
	expires := int(d.HandoffExpires.Sub(h.clock.Now()).Seconds())
	_, err := w.Write(append(page.AppendHandoffJSON(make([]byte, 0, 4096), h.Name, status, link, qr, max(expires, 0)), '\n'))
	return err
}

// handoffLink is the link that gives code's place to the device that opens it: this
// site, at the address the request was made at (without the room's own parameters),
// with the code added. A QR code's cost grows with what it holds, and the address is
// the client's to make as long as it likes, so a link that would be longer than the
// most drawn (page.MaxQRLink) leaves the address's query out: the other device opens
// the same path. The scheme is the one the visitor reached the site by (linkScheme).
func handoffLink(r *http.Request, code string) string {
	u := r.URL
	if orig, ok := r.Context().Value(caddyhttp.OriginalRequestCtxKey).(http.Request); ok && orig.URL != nil {
		u = orig.URL
	}
	query, _, _ := withoutParam(u.RawQuery, proofParam)
	query, _, _ = withoutParam(query, passParam)
	query, _, _ = withoutParam(query, handoffParam)
	param := handoffParam + "=" + url.QueryEscape(code)
	origin := linkScheme(r) + "://" + r.Host
	if query != "" {
		if link := origin + sameSiteTarget(u.EscapedPath(), query+"&"+param); len(link) <= page.MaxQRLink {
			return link
		}
	}
	return origin + sameSiteTarget(u.EscapedPath(), param)
}

// linkScheme is the scheme the visitor reached the site by, for the link that carries
// a code: the code is the place, and must not travel in the clear where the visitor's
// own connection does not. It is https over TLS, and behind a TLS-terminating proxy
// that Caddy trusts (the server's trusted_proxies), https when the proxy's
// X-Forwarded-Proto says so (its last value, as Caddy's reverse proxy reads it). A
// client's own X-Forwarded-Proto is not heeded: Caddy trusts only what its trusted
// proxies say, and so does the room.
func linkScheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	if trusted, _ := caddyhttp.GetVar(r.Context(), caddyhttp.TrustedProxyVarKey).(bool); !trusted {
		return "http"
	}
	vs := r.Header.Values("X-Forwarded-Proto")
	if len(vs) == 0 {
		return "http"
	}
	last := vs[len(vs)-1]
	if i := strings.LastIndexByte(last, ','); i >= 0 {
		last = last[i+1:]
	}
	if strings.EqualFold(strings.TrimSpace(last), "https") {
		return "https"
	}
	return "http"
}

// handoffBusy answers a request for a code when this instance has given out all the
// codes it may for now (room.Decision.HandoffBusy): 429, to come back in a second.
// The place is as it was, and the page says it could not make a link.
func handoffBusy(w http.ResponseWriter) error {
	hdr := w.Header()
	hdr.Set("Retry-After", "1")
	hdr.Set("Cache-Control", "no-store")
	return caddyhttp.Error(http.StatusTooManyRequests, errHandoffBusy)
}

// errHandoffBusy is handoffBusy's error, {http.error.message} in handle_errors.
var errHandoffBusy = errors.New("too many hand-off codes asked for at once; try again in a moment")

// Handoff counts a place this instance gave to another device (room.Metrics).
func (m *roomMetrics) Handoff() { m.handoffs.Inc() }

// handoffsCounter is the metric of the hand-offs, created with the others.
func handoffsCounter(ns, sub string, labels []string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "handoffs_total",
		Help: "Places given to another device with a hand-off code, by this instance."}, labels)
}
