package waitingroom

import (
	"net/http"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"

	"github.com/caddyserver/caddy/v2"
)

// BenchmarkChainAdmittedSessionMax is BenchmarkChainAdmitted with session_max on: the
// admitted hot path decides it from the cookie, so the two must run alike (compare
// them in one run).
func BenchmarkChainAdmittedSessionMax(b *testing.B) {
	tr := newTestRoomWith(b, 1, func(h *Handler) { h.SessionMax = caddy.Duration(time.Hour) })
	tr.h.clock = room.SystemClock{}
	_, cookie := tr.visit("", "")
	next := okHandler()
	benchRequests(b, func(w http.ResponseWriter, r *http.Request) { _ = tr.h.ServeHTTP(w, r, next) }, tr.h.Cookie.Name+"="+cookie)
}
