package waitingroom

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// view is what a waiter is told, as JSON (API clients, polling, WebSocket) and as the
// page's numbers. The JSON shape is public (see the README).
type view struct {
	Type           string `json:"type,omitempty"` // "position" on the WebSocket only
	Room           string `json:"room"`
	Status         string `json:"status"` // "queued", "rejected" or "unavailable"
	Position       int    `json:"position,omitempty"`
	Waiting        int    `json:"waiting"`
	Active         int    `json:"active"`
	Capacity       int    `json:"capacity"`
	ETASeconds     *int   `json:"eta_seconds"` // null while there is no evidence to estimate from, and while nobody is admitted
	RefreshSeconds int    `json:"refresh_seconds"`
	// StartsInSeconds counts down to a scheduled event's start, during its pre-queue only.
	StartsInSeconds *int `json:"starts_in_seconds,omitempty"`

	prequeue bool // for the page: the pre-queue's countdown
	lottery  bool // for the page: the pre-queue ends in a draw
}

// rejectRetryAfter is when a turned-away visitor is told to come back.
const rejectRetryAfter = 60

// queuedView is the waiter at position's view, from the counters the room loop keeps.
func (h *Handler) queuedView(position int, p policy) view {
	rate, known := h.throughput(p)
	return h.viewAt(position, h.room.stats.Load(), rate, known, p)
}

// throughput is the admissions per second a wait is estimated with: what the room
// measured, but never more than the rate limit allows (a burst admitted at join would
// otherwise promise a rate-bound queue more than it gets).
func (h *Handler) throughput(p policy) (float64, bool) {
	rate, known := h.room.est.rate()
	if known && p.rate.limits() {
		rate = min(rate, p.rate.perSecond())
	}
	return rate, known
}

// viewAt builds a waiter's view from counters and a throughput read once, so the hub
// can build thousands of views per round without touching the estimator each time.
func (h *Handler) viewAt(position int, st *Stats, rate float64, rateKnown bool, p policy) view {
	v := view{
		Room:           h.Name,
		Status:         "queued",
		Position:       position,
		Waiting:        max(st.Waiting, position),
		Active:         st.Active,
		Capacity:       p.capacity,
		RefreshSeconds: h.refreshSeconds(),
	}
	if rateKnown && !p.holds() {
		s := int(etaAt(position, rate) / time.Second)
		v.ETASeconds = &s
	}
	if p.prequeue {
		s := ceilSeconds(p.startsIn)
		v.StartsInSeconds, v.prequeue, v.lottery = &s, true, p.event.Shuffle
	}
	return v
}

// ceilSeconds rounds up, so a countdown reaches 0 at the start and not before.
func ceilSeconds(d time.Duration) int { return int((d + time.Second - 1) / time.Second) }

// refreshSeconds is how often a page without WebSocket polls (and the no-JS page
// reloads): often enough to keep the place alive well within queue_ttl.
func (h *Handler) refreshSeconds() int {
	d := time.Duration(h.QueueTTL) / 12
	return int(min(max(d, 2*time.Second), 10*time.Second) / time.Second)
}

// serveQueued answers a waiter: the WebSocket, JSON or the waiting page.
func (h *Handler) serveQueued(w http.ResponseWriter, r *http.Request, id VisitorID, st Status, p policy) error {
	if isWaitingSocket(r) {
		return h.room.hub.serve(w, r, id, st)
	}
	v := h.queuedView(st.Position, p)
	return h.respond(w, r, h.StatusCode, v)
}

// serveUnavailable answers a new visitor while the store is down and the room fails
// closed.
func (h *Handler) serveUnavailable(w http.ResponseWriter, r *http.Request) error {
	p := h.policyAt(h.clock.Now())
	v := view{Room: h.Name, Status: "unavailable", Capacity: p.capacity, RefreshSeconds: h.refreshSeconds()}
	return h.respond(w, r, http.StatusServiceUnavailable, v)
}

// serveRejected answers a visitor the reject mode turned away: a static "sold out,
// come back later" page (or JSON), 503, no cookie, nothing kept.
func (h *Handler) serveRejected(w http.ResponseWriter, r *http.Request, p policy) error {
	st := h.room.stats.Load()
	v := view{Room: h.Name, Status: "rejected", Waiting: st.Waiting, Active: st.Active,
		Capacity: p.capacity, RefreshSeconds: rejectRetryAfter}
	return h.respond(w, r, h.RejectStatusCode, v)
}

func (h *Handler) respond(w http.ResponseWriter, r *http.Request, code int, v view) error {
	// Each answer adds what it varies on: the page on Accept-Encoding too (writePage).
	setHeader(w.Header(),
		headerField{"Cache-Control", "no-store"},
		headerField{"Retry-After", strconv.Itoa(v.RefreshSeconds)},
		headerField{"X-Content-Type-Options", "nosniff"},
		headerField{"Referrer-Policy", "no-referrer"})
	if prefersJSON(r.Header.Get("Accept")) {
		setHeader(w.Header(),
			headerField{"Content-Type", "application/json"},
			headerField{"Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'"}, // data, never a document
			headerField{"Vary", "Accept, Accept-Language"})
		w.WriteHeader(code)
		var buf [256]byte
		_, err := w.Write(append(v.appendJSON(buf[:0]), '\n')) // as json.Encoder writes it
		return err
	}
	return h.writePage(w, r, code, v)
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
