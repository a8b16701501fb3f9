package page

import (
	"net/http"
	"strings"
)

// KeepFromSharedCaches makes an upstream answer that carries the room's Set-Cookie
// private: a shared cache (a CDN, a caching proxy) that stored it would hand that
// visitor's cookie, an admitted session, to everyone it serves the answer to. The
// upstream's other directives stay; "public" and "s-maxage" (which only speak to
// shared caches) go; an answer that already says "private" or "no-store" is left as
// it is. The browser's own cache keeps what the upstream told it.
//
// Only the answers the room sets or clears its cookie on come here (the admitted
// visitor's first answer, one every queue.TouchEvery, a revoke): the admitted hot path
// never does.
func KeepFromSharedCaches(h http.Header) {
	lines := h["Cache-Control"]
	var kept strings.Builder
	for _, line := range lines {
		for more, rest := true, line; more; {
			var d string
			d, rest, more = cutDirective(rest)
			name, value, _ := strings.Cut(d, "=")
			name = strings.TrimSpace(name)
			switch {
			case name == "":
				continue
			case strings.EqualFold(name, "no-store"), strings.EqualFold(name, "private") && value == "":
				return // no shared cache keeps it already
			case strings.EqualFold(name, "public"), strings.EqualFold(name, "s-maxage"), strings.EqualFold(name, "private"):
				continue // the unqualified private added below covers a qualified one
			}
			kept.WriteString(d)
			kept.WriteString(", ")
		}
	}
	kept.WriteString("private")
	h["Cache-Control"] = []string{kept.String()}
}

// cutDirective cuts the first directive off a Cache-Control line, at the first comma
// outside a quoted string (a qualified no-cache or private lists field names).
func cutDirective(line string) (directive, rest string, more bool) {
	quoted := false
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '"':
			quoted = !quoted
		case '\\':
			if quoted {
				i++ // a quoted pair
			}
		case ',':
			if !quoted {
				return strings.TrimSpace(line[:i]), line[i+1:], true
			}
		}
	}
	return strings.TrimSpace(line), "", false
}
