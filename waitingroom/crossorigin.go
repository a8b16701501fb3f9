package waitingroom

import (
	"net/http"
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
