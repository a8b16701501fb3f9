package waitingroom

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/assets"
)

// view is what a waiter is told, as JSON (API clients, polling, WebSocket) and as the
// page's numbers. The JSON shape is public (see the README).
type view struct {
	Type           string `json:"type,omitempty"` // "position" on the WebSocket only
	Room           string `json:"room"`
	Status         string `json:"status"` // "queued" or "unavailable"
	Position       int    `json:"position,omitempty"`
	Waiting        int    `json:"waiting"`
	Active         int    `json:"active"`
	Capacity       int    `json:"capacity"`
	ETASeconds     *int   `json:"eta_seconds"` // null while there is no evidence to estimate from
	RefreshSeconds int    `json:"refresh_seconds"`
}

// queuedView is the waiter at position's view, from the counters the room loop keeps.
func (h *Handler) queuedView(position int) view {
	rate, known := h.room.est.rate()
	return h.viewAt(position, h.room.stats.Load(), rate, known)
}

// viewAt builds a waiter's view from counters and a throughput read once, so the hub
// can build thousands of views per round without touching the estimator each time.
func (h *Handler) viewAt(position int, st *Stats, rate float64, rateKnown bool) view {
	v := view{
		Room:           h.Name,
		Status:         "queued",
		Position:       position,
		Waiting:        max(st.Waiting, position),
		Active:         st.Active,
		Capacity:       h.capacity(),
		RefreshSeconds: h.refreshSeconds(),
	}
	if rateKnown {
		s := int(etaAt(position, rate) / time.Second)
		v.ETASeconds = &s
	}
	return v
}

// refreshSeconds is how often a page without WebSocket polls (and the no-JS page
// reloads): often enough to keep the place alive well within queue_ttl.
func (h *Handler) refreshSeconds() int {
	d := time.Duration(h.QueueTTL) / 12
	return int(min(max(d, 2*time.Second), 10*time.Second) / time.Second)
}

// serveQueued answers a waiter: the WebSocket, JSON or the waiting page.
func (h *Handler) serveQueued(w http.ResponseWriter, r *http.Request, id VisitorID, st Status) error {
	if isWaitingSocket(r) {
		return h.room.hub.serve(w, r, id, st)
	}
	v := h.queuedView(st.Position)
	return h.respond(w, r, h.StatusCode, v)
}

// serveUnavailable answers a new visitor while the store is down and the room fails
// closed.
func (h *Handler) serveUnavailable(w http.ResponseWriter, r *http.Request) error {
	v := view{Room: h.Name, Status: "unavailable", Capacity: h.capacity(), RefreshSeconds: h.refreshSeconds()}
	return h.respond(w, r, http.StatusServiceUnavailable, v)
}

func (h *Handler) respond(w http.ResponseWriter, r *http.Request, code int, v view) error {
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("Retry-After", strconv.Itoa(v.RefreshSeconds))
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Add("Vary", "Accept, Accept-Language")
	if prefersJSON(r.Header.Get("Accept")) {
		hdr.Set("Content-Type", "application/json")
		w.WriteHeader(code)
		return json.NewEncoder(w).Encode(v)
	}
	return h.writePage(w, r, code, v)
}

// writePage renders the waiting page. It renders into a buffer first so that a broken
// operator template falls back to the embedded page instead of a half-written one.
func (h *Handler) writePage(w http.ResponseWriter, r *http.Request, code int, v view) error {
	lang := assets.Negotiate(r.Header.Get("Accept-Language"))
	nonce := newNonce()
	data := assets.PageData{
		Room:           v.Room,
		Lang:           lang,
		State:          v.Status,
		Position:       v.Position,
		Waiting:        v.Waiting,
		Active:         v.Active,
		Capacity:       v.Capacity,
		ETAKnown:       v.ETASeconds != nil,
		Progress:       progress(v.Position, v.Waiting),
		RefreshSeconds: v.RefreshSeconds,
		Nonce:          nonce,
		T:              assets.Messages(lang),
	}
	if v.ETASeconds != nil {
		data.ETASeconds = *v.ETASeconds
	}
	var buf bytes.Buffer
	if err := h.page.Execute(&buf, data); err != nil {
		h.logger.Error("waiting page template failed; serving the embedded page",
			zap.String("room", h.Name), zap.String("template", h.Template), zap.Error(err))
		buf.Reset()
		if err := assets.DefaultTemplate().Execute(&buf, data); err != nil {
			return err
		}
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	hdr.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+nonce+"'; style-src 'nonce-"+nonce+
		"'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	hdr.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(code)
	_, err := w.Write(buf.Bytes())
	return err
}

// progress is how far toward the front the waiter is, 0..100: the back of the line is
// 0, the head is 100.
func progress(position, waiting int) int {
	if position < 1 || waiting < 1 {
		return 0
	}
	p := 100 - 100*(position-1)/waiting
	return min(max(p, 0), 100)
}

func newNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawStdEncoding.EncodeToString(b[:])
}

// isWaitingSocket reports whether r is the waiting page's WebSocket upgrade (and not,
// say, the site's own WebSocket, which the room passes on like any request).
func isWaitingSocket(r *http.Request) bool {
	if r.Method != http.MethodGet || !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return false
	}
	for _, line := range r.Header.Values("Sec-WebSocket-Protocol") {
		for p := range strings.SplitSeq(line, ",") {
			if strings.TrimSpace(p) == subprotocol {
				return true
			}
		}
	}
	return false
}

// prefersJSON reports whether an Accept header ranks JSON above HTML. Browsers ask for
// text/html first and get the page; API clients and the page's own polling ask for
// application/json.
func prefersJSON(accept string) bool {
	if accept == "" {
		return false
	}
	var jsonQ, htmlQ float64
	for part := range strings.SplitSeq(accept, ",") {
		mediaType, params, _ := strings.Cut(part, ";")
		q := 1.0
		for p := range strings.SplitSeq(params, ";") {
			if k, val, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(k, "q") {
				if f, err := strconv.ParseFloat(val, 64); err == nil {
					q = f
				}
			}
		}
		switch strings.ToLower(strings.TrimSpace(mediaType)) {
		case "application/json", "application/*":
			jsonQ = max(jsonQ, q)
		case "text/html", "text/*":
			htmlQ = max(htmlQ, q)
		}
	}
	return jsonQ > htmlQ
}
