package waitingroom

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/encode"
	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
)

// The answers the room writes are internal/page's; what only Caddy knows of the
// request (its language setting aside: the original address, the scheme behind a
// trusted proxy, the encodings it takes) is read here, and what Caddy answers itself
// (the 429s, which handle_errors can restyle) is made here.

// respond answers with what the visitor is told: JSON, or the waiting page in the
// visitor's language (or the room's fixed one), gzipped when the client takes it.
func (h *Handler) respond(w http.ResponseWriter, r *http.Request, code int, v page.View, s *settings.Snapshot) error {
	return page.Answer(w, r, code, v, h.page, h.lang(r), s.Mode, acceptsGzip(r))
}

// lang is the page's language: the room's fixed one, else the visitor's choice.
func (h *Handler) lang(r *http.Request) string {
	if h.Lang != "" {
		return h.Lang
	}
	return page.Negotiate(r.Header.Get("Accept-Language"))
}

// acceptsGzip reports whether the waiting page may go out gzipped to r: Caddy's own
// Accept-Encoding negotiation (the encode module's) ranks gzip first among gzip and
// identity. No header at all means identity: a client that names no coding is a
// script or a probe, not a browser, and may well not inflate it.
func acceptsGzip(r *http.Request) bool {
	for _, coding := range encode.AcceptedEncodings(r, []string{"gzip", "identity"}) {
		switch coding {
		case "gzip", "x-gzip":
			return true
		case "identity":
			return false
		}
	}
	return false
}

// serveChallenge answers a new visitor with a challenge of bits: the page that
// solves it, or JSON, with the waiting page's status code.
func (h *Handler) serveChallenge(w http.ResponseWriter, r *http.Request, challenge string, bits int) error {
	err := page.AnswerChallenge(w, r, h.StatusCode, h.Name, h.lang(r), challenge, bits)
	if errors.Is(err, page.ErrRendering) {
		return caddyhttp.Error(http.StatusInternalServerError, err)
	}
	return err
}

// serveHandoff answers a request for a code with the code's link (handoffLink) and,
// when the link is short enough to draw, its QR code.
func (h *Handler) serveHandoff(w http.ResponseWriter, r *http.Request, d *room.Decision) error {
	expires := int(d.HandoffExpires.Sub(h.clock.Now()).Seconds())
	return page.AnswerHandoff(w, h.Name, d.Place.String(), handoffLink(r, d.Handoff), expires, func(err error) {
		h.logger.Warn("drawing a hand-off QR code", zap.String("room", h.Name), zap.Error(err))
	})
}

// handoffLink is the link that gives code's place to the device that opens it
// (page.HandoffLink): this site, as the visitor reached it, at the address the
// request was made at.
func handoffLink(r *http.Request, code string) string {
	return page.HandoffLink(linkScheme(r), r.Host, originalURL(r), code)
}

// originalURL is the address the request was made at, before any rewrite.
func originalURL(r *http.Request) *url.URL {
	if orig, ok := r.Context().Value(caddyhttp.OriginalRequestCtxKey).(http.Request); ok && orig.URL != nil {
		return orig.URL
	}
	return r.URL
}

// linkScheme is the scheme the visitor reached the site by (page.LinkScheme): only
// Caddy knows whether the request came over TLS and from one of its trusted proxies.
func linkScheme(r *http.Request) string {
	trusted, _ := caddyhttp.GetVar(r.Context(), caddyhttp.TrustedProxyVarKey).(bool)
	return page.LinkScheme(r.TLS != nil, trusted, r.Header.Values("X-Forwarded-Proto"))
}

// seeClean sends a browser that came with a proof, a pass or a hand-off code in the
// address back to the same address without it, now that it has its cookie.
func (h *Handler) seeClean(w http.ResponseWriter, r *http.Request) error {
	page.SeeClean(w, originalURL(r))
	return nil
}

// tooMany answers a request over a per-address cap: nothing is stored or counted. It
// is a Caddy error, not an answer of the room's, so handle_errors can restyle it; the
// Retry-After set here stays on the response (Caddy's error routes write to the same
// ResponseWriter), and without handle_errors Caddy answers the bare status.
func tooMany(w http.ResponseWriter, retryAfter time.Duration) error {
	hdr := w.Header()
	hdr.Set("Retry-After", strconv.Itoa(int(max(retryAfter, time.Second)/time.Second)))
	hdr.Set("Cache-Control", "no-store")
	return caddyhttp.Error(http.StatusTooManyRequests, errTooMany)
}

// handoffBusy answers a request for a code when this instance has given out all the
// codes it may for now (room.HandoffBusy): 429, to come back in a second. The place
// is as it was, and the page says it could not make a link.
func handoffBusy(w http.ResponseWriter) error {
	hdr := w.Header()
	hdr.Set("Retry-After", "1")
	hdr.Set("Cache-Control", "no-store")
	return caddyhttp.Error(http.StatusTooManyRequests, errHandoffBusy)
}

// The 429s' errors, {http.error.message} in handle_errors.
var (
	errTooMany     = errors.New("too many requests from this address")
	errHandoffBusy = errors.New("too many hand-off codes asked for at once; try again in a moment")
)
