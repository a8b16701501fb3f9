package page

import (
	"net/http"
	"net/url"
	"strings"
)

// CrossOrigin reports whether r comes from a page on another site: it carries an
// Origin whose host is not the request's Host. The waiting socket's upgrade
// (websocket.Accept, given no OriginPatterns) refuses such a request with 403; the
// room asks first, so that it refuses before it stores anything. A request without
// Origin (not a browser) is not cross-origin. push's
// TestCrossOriginAgreesWithTheUpgrade pins the two together.
func CrossOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	u, err := url.Parse(origin)
	return err != nil || !strings.EqualFold(r.Host, u.Host)
}

// FromAnotherSite reports whether r was sent from another site's page, or another
// origin of this site: a request for a hand-off code (which only the room's own page
// makes) and a link that presents one (which another site can make a visitor follow)
// are both refused then. The browser says where a request comes from in
// Sec-Fetch-Site: anything but this origin ("same-origin") or the visitor's own hand
// ("none": a typed, pasted or scanned address) is another site. A browser that does
// not send it is judged by the Origin, else the Referer, it names. A request with
// none of these (not a browser: a JSON client) is not from another site; a web page
// cannot make a browser send such a request.
func FromAnotherSite(r *http.Request) bool {
	if CrossOrigin(r) {
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

// IsPreflight reports whether r is a CORS preflight: the browser asking, without
// cookies, whether it may send a cross-origin request. It is nobody's visit, so it
// goes on to the handler that answers it (docs/waiting-page.md, "Every method").
func IsPreflight(r *http.Request) bool {
	if r.Method != http.MethodOptions {
		return false
	}
	_, ok := r.Header["Access-Control-Request-Method"]
	return ok
}

// IsPageLoad says r is a browser's page load (GET or HEAD, HTML rather than JSON):
// one that can be sent to another address. The waiting socket's upgrade, a GET too,
// is the caller's to leave out.
func IsPageLoad(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && !PrefersJSON(r.Header.Get("Accept"))
}
