package page

import (
	"strconv"
	"strings"
)

// PrefersJSON reports whether an Accept header ranks JSON above HTML. Browsers ask for
// text/html first and get the page; API clients and the page's own polling ask for
// application/json.
func PrefersJSON(accept string) bool {
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
