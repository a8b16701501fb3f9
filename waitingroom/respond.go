package waitingroom

import (
	"net/http"
	"strconv"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/push"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// rejectRetryAfter is when a turned-away visitor is told to come back.
const rejectRetryAfter = 60

// queuedView is what the waiter at position is told, from the counters the room loop
// keeps. (Not through teller: a closure per answer is an allocation per queued
// request.)
func (h *Handler) queuedView(position int, p policy) page.View {
	rate, known := h.throughput(p)
	return h.viewAt(position, h.room.stats.Load(), rate, known, p)
}

// teller returns what a waiter is told under policy p, by position: the counters and
// the throughput are read once, so the hub can build thousands of views per round
// without touching the estimator each time.
func (h *Handler) teller(p policy) func(position int) page.View {
	st := h.room.stats.Load()
	rate, known := h.throughput(p)
	return func(position int) page.View { return h.viewAt(position, st, rate, known, p) }
}

// throughput is the admissions per second a wait is estimated with: what the room
// measured, but never more than the rate limit allows (a burst admitted at join would
// otherwise promise a rate-bound queue more than it gets).
func (h *Handler) throughput(p policy) (float64, bool) {
	rate, known := h.room.est.Rate()
	if known && p.rate.limits() {
		rate = min(rate, p.rate.perSecond())
	}
	return rate, known
}

// viewAt builds what the waiter at position is told from counters and a throughput
// read once (see teller).
func (h *Handler) viewAt(position int, st *queue.Stats, rate float64, rateKnown bool, p policy) page.View {
	v := page.View{
		Room:           h.Name,
		Status:         "queued",
		Position:       position,
		Waiting:        max(st.Waiting, position),
		Active:         st.Active,
		Capacity:       p.capacity,
		RefreshSeconds: h.refreshSeconds(),
		AwayTTLSeconds: int(h.awayTTL() / time.Second),
		Message:        h.message(),
	}
	if rateKnown && !p.holds() {
		s := int(queue.ETA(position, rate) / time.Second)
		v.ETASeconds = &s
	}
	if p.prequeue {
		s := ceilSeconds(p.startsIn)
		v.StartsInSeconds, v.Prequeue, v.Lottery = &s, true, p.event.Shuffle
	}
	return v
}

// ceilSeconds rounds up, so a countdown reaches 0 at the start and not before.
func ceilSeconds(d time.Duration) int { return int((d + time.Second - 1) / time.Second) }

// refreshSeconds is how often a page without WebSocket polls (and the no-JS page
// reloads): often enough to keep the place alive well within queue_ttl.
func (h *Handler) refreshSeconds() int {
	d := h.queueTTL() / 12
	return int(min(max(d, 2*time.Second), 10*time.Second) / time.Second)
}

// serveQueued answers a waiter: the WebSocket, JSON or the waiting page.
func (h *Handler) serveQueued(w http.ResponseWriter, r *http.Request, id queue.VisitorID, st queue.Status, p policy) error {
	if push.IsWaitingSocket(r) {
		return h.serveSocket(w, r, id, st)
	}
	v := h.statusView(st, p)
	return h.respond(w, r, h.StatusCode, v)
}

// statusView is what a waiter is told right after the store call made for it (a join
// or a status): the counts that call saw, not the room loop's last tick, so a visitor
// admitted a moment ago is in active and the waiter's own arrival is in waiting.
func (h *Handler) statusView(st queue.Status, p policy) page.View {
	rate, known := h.throughput(p)
	seen := queue.Stats{Active: st.Active, Waiting: st.Waiting}
	v := h.viewAt(st.Position, &seen, rate, known, p)
	v.Returned = st.Returned
	return v
}

// serveSocket hands a waiter's WebSocket to the room's hub, within the per-address
// cap on open sockets.
func (h *Handler) serveSocket(w http.ResponseWriter, r *http.Request, id queue.VisitorID, st queue.Status) error {
	var release func()
	if cap := h.PerIP; cap != nil && cap.MaxConnections > 0 {
		addr := clientAddr(r)
		if !h.room.ips.openConn(addr, cap.MaxConnections) {
			return tooMany(w, time.Duration(h.refreshSeconds())*time.Second)
		}
		release = func() { h.room.ips.closeConn(addr) }
	}
	return h.room.hub.Serve(w, r, id, st, release)
}

// serveUnavailable answers a new visitor while the store is down and the room fails
// closed.
func (h *Handler) serveUnavailable(w http.ResponseWriter, r *http.Request) error {
	p := h.policyAt(h.clock.Now())
	v := page.View{Room: h.Name, Status: "unavailable", Capacity: p.capacity, RefreshSeconds: h.refreshSeconds(), Message: h.message()}
	return h.respond(w, r, http.StatusServiceUnavailable, v)
}

// serveRejected answers a visitor the reject mode turned away: a static "sold out,
// come back later" page (or JSON), 503, no cookie, nothing kept.
func (h *Handler) serveRejected(w http.ResponseWriter, r *http.Request, p policy) error {
	return h.respond(w, r, h.RejectStatusCode, h.rejectedView(p))
}

// rejectedView is what a turned-away visitor is told.
func (h *Handler) rejectedView(p policy) page.View {
	st := h.room.stats.Load()
	return page.View{Room: h.Name, Status: "rejected", Waiting: st.Waiting, Active: st.Active,
		Capacity: p.capacity, RefreshSeconds: rejectRetryAfter, Message: h.message()}
}

func (h *Handler) respond(w http.ResponseWriter, r *http.Request, code int, v page.View) error {
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
	return h.writePage(w, r, code, v)
}

// field is a response header field.
func field(name, value string) page.Field { return page.Field{Name: name, Value: value} }

// writePage answers with the waiting page in the visitor's language (or the room's
// fixed one), gzipped when the client takes it.
func (h *Handler) writePage(w http.ResponseWriter, r *http.Request, code int, v page.View) error {
	lang := h.Lang
	if lang == "" {
		lang = page.Negotiate(r.Header.Get("Accept-Language"))
	}
	csp, nonce := page.NewCSP()
	data := v.Data(lang, h.policyAt(h.clock.Now()).mode, nonce)
	return h.page.Write(w, code, csp, &data, acceptsGzip(r))
}
