package waitingroom

import (
	"net/http"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/push"
)

// isPreflight reports whether r is a CORS preflight: the browser asking, without
// cookies, whether it may send a cross-origin request. It is nobody's visit, so it
// goes on to the handler that answers it (docs/waiting-page.md, "Every method").
func isPreflight(r *http.Request) bool {
	if r.Method != http.MethodOptions {
		return false
	}
	_, ok := r.Header["Access-Control-Request-Method"]
	return ok
}

// refusedSocket answers 403 to a waiting-page WebSocket opened from another site's
// page, and says so. It runs before the room stores anything for the request (a
// place, a heard-from time, a cookie): the upgrade would refuse it anyway (see
// push.CrossOrigin), and a refused request must leave no trace.
func refusedSocket(w http.ResponseWriter, r *http.Request, v *visit) bool {
	if !push.IsWaitingSocket(r) || !push.CrossOrigin(r) {
		return false
	}
	v.decided(visitRejected)
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, "cross-origin WebSocket refused", http.StatusForbidden)
	return true
}
