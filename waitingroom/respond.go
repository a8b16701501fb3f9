package waitingroom

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
)

// respond answers with what the visitor is told: JSON, or the waiting page.
func (h *Handler) respond(w http.ResponseWriter, r *http.Request, code int, v page.View, s *room.Settings) error {
	// Each answer adds what it varies on: the page on Accept-Encoding too (writePage).
	page.SetHeader(w.Header(),
		field("Cache-Control", "no-store"),
		field("Retry-After", strconv.Itoa(v.RefreshSeconds)),
		field("X-Content-Type-Options", "nosniff"),
		field("Referrer-Policy", "no-referrer"))
	if page.PrefersJSON(r.Header.Get("Accept")) {
		page.SetHeader(w.Header(),
			field("Content-Type", "application/json"),
			field("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'"), // data, never a document
			field("Vary", "Accept, Accept-Language"))
		w.WriteHeader(code)
		var buf [256]byte
		_, err := w.Write(append(v.AppendJSON(buf[:0]), '\n')) // as json.Encoder writes it
		return err
	}
	return h.writePage(w, r, code, v, s)
}

// field is a response header field.
func field(name, value string) page.Field { return page.Field{Name: name, Value: value} }

// writePage answers with the waiting page in the visitor's language (or the room's
// fixed one), gzipped when the client takes it.
func (h *Handler) writePage(w http.ResponseWriter, r *http.Request, code int, v page.View, s *room.Settings) error {
	csp, nonce := page.NewCSP()
	data := v.Data(h.lang(r), s.Mode, nonce)
	return h.page.Write(w, code, csp, &data, acceptsGzip(r))
}

// lang is the page's language: the room's fixed one, else the visitor's choice.
func (h *Handler) lang(r *http.Request) string {
	if h.Lang != "" {
		return h.Lang
	}
	return page.Negotiate(r.Header.Get("Accept-Language"))
}

// serveChallenge answers a new visitor with a challenge of bits: the page that
// solves it, or JSON, with the waiting page's status code.
func (h *Handler) serveChallenge(w http.ResponseWriter, r *http.Request, challenge string, bits int) error {
	page.SetHeader(w.Header(),
		field("Cache-Control", "no-store"),
		field("X-Content-Type-Options", "nosniff"),
		field("Referrer-Policy", "no-referrer"))
	if page.PrefersJSON(r.Header.Get("Accept")) {
		page.SetHeader(w.Header(),
			field("Content-Type", "application/json"),
			field("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'"),
			field("Vary", "Accept, Accept-Language"))
		w.WriteHeader(h.StatusCode)
		var buf [160]byte
		_, err := w.Write(append(page.AppendChallengeJSON(buf[:0], h.Name, challenge, bits), '\n'))
		return err
	}
	csp, nonce := page.NewCSP()
	body, err := page.RenderChallenge(make([]byte, 0, 8<<10), &page.ChallengeData{
		Room: h.Name, Lang: h.lang(r), Challenge: challenge, Difficulty: bits, Nonce: nonce})
	if err != nil {
		return caddyhttp.Error(http.StatusInternalServerError, fmt.Errorf("rendering the challenge page: %w", err))
	}
	fields := page.Fields(csp)
	page.SetHeader(w.Header(), fields[0], fields[1], fields[2],
		field("Content-Length", strconv.Itoa(len(body))),
		field("Vary", "Accept, Accept-Language"))
	w.WriteHeader(h.StatusCode)
	_, err = w.Write(body)
	return err
}
