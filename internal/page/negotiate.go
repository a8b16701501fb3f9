package page

import (
	"fmt"
	"net/http"
	"slices"
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

// Statuses are the statuses a waiting page may have: a plain page (200), "accepted,
// not done yet" (202), "too many requests" (429) or "unavailable" (503).
var Statuses = []int{http.StatusOK, http.StatusAccepted, http.StatusTooManyRequests, http.StatusServiceUnavailable}

// ParseStatus reads the status what (status_code, reject_status_code) names, as the
// Caddyfile writes it or as the JSON config's number prints, and refuses one that is
// not among Statuses.
func ParseStatus(what, text string) (int, error) {
	n, err := strconv.Atoi(text)
	if err != nil || !slices.Contains(Statuses, n) {
		return 0, fmt.Errorf("%s must be one of 200, 202, 429 or 503, got %q", what, text)
	}
	return n, nil
}

// CheckLang refuses a language the page does not speak.
func CheckLang(lang string) error {
	if !Supported(lang) {
		return fmt.Errorf("lang must be one of %s, got %q", strings.Join(Languages(), ", "), lang)
	}
	return nil
}
