package waitingroom

import (
	"net/http"
	"strings"
)

// takeParam takes every query parameter named name out of the request's address (the
// URL and RequestURI both, so that neither the upstream, the access log nor the waiting
// page's return address sees it) and returns the first one's raw (still escaped)
// value. A request without the name in its query costs a substring search: this runs
// on every request that reaches the room, the admitted ones included.
func takeParam(r *http.Request, name string) (raw string, found bool) {
	rest, raw, found := withoutParam(r.URL.RawQuery, name)
	if !found {
		return "", false
	}
	r.URL.RawQuery = rest
	if path, _, ok := strings.Cut(r.RequestURI, "?"); ok {
		r.RequestURI = path
		if rest != "" {
			r.RequestURI += "?" + rest
		}
	}
	return raw, true
}

// withoutParam returns query without the parameters named name, the others byte for
// byte (empty ones too), and the first removed one's raw value.
func withoutParam(query, name string) (rest, raw string, found bool) {
	if !strings.Contains(query, name) {
		return query, "", false
	}
	var kept strings.Builder
	wrote := false
	for more, left := true, query; more; {
		var part string
		part, left, more = strings.Cut(left, "&")
		if key, value, _ := strings.Cut(part, "="); key == name {
			if !found {
				raw, found = value, true
			}
			continue
		}
		if wrote {
			kept.WriteByte('&')
		}
		kept.WriteString(part)
		wrote = true
	}
	if !found {
		return query, "", false
	}
	return kept.String(), raw, true
}
