package waitingroom

import (
	"net/http"
	"net/url"
)

// How a visitor presents a pass (docs/passes.md).
const (
	passParam  = "waiting_room_pass"
	passHeader = "Waiting-Room-Pass"
)

// takePass returns the pass the request presents, if any, and removes it from the
// request, so the upstream never sees it: the header, and the query parameter.
func takePass(r *http.Request) string {
	var pass string
	if vs, ok := r.Header[passHeader]; ok {
		if len(vs) > 0 {
			pass = vs[0]
		}
		delete(r.Header, passHeader)
	}
	if raw, found := takeParam(r, passParam); found && pass == "" {
		pass, _ = url.QueryUnescape(raw)
	}
	return pass
}
