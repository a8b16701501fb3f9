package admin

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
)

// change guards a route that changes a room against requests a web page on another
// site can make the operator's browser send. Caddy's admin endpoint already checks
// Origin, but a proxy in front of it (how a browser reaches the dashboard) can vouch
// for any Origin, and operators copy proxy configs; so the routes hold on their own:
//
//   - a browser says where a request comes from in Sec-Fetch-Site: anything but the
//     dashboard's own origin ("same-origin") or the operator's own hand ("none") is
//     refused, a sibling host ("same-site") too;
//   - a POST must say it is JSON. POST is the one changing method a page can send
//     across sites without asking the server first (a form, or fetch in no-cors
//     mode), and neither can set Content-Type: application/json without a CORS
//     preflight, which Caddy's admin endpoint refuses to another origin. This holds in
//     browsers that send no Sec-Fetch-Site. PATCH and DELETE are always preflighted.
//
// Tools that are not browsers (curl, the caddy CLI, scripts) send no Sec-Fetch-Site.
func change(route func(http.ResponseWriter, *http.Request) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		if site, ok := r.Header["Sec-Fetch-Site"]; ok {
			if s := strings.ToLower(strings.Join(site, ",")); s != "same-origin" && s != "none" {
				return apiError(http.StatusForbidden, fmt.Errorf(
					"refused a change sent from another site (Sec-Fetch-Site %q): open the dashboard on its own origin, or use a client that is not a browser", clip(s)))
			}
		}
		if r.Method == http.MethodPost {
			if err := wantJSON(r.Header.Get("Content-Type")); err != nil {
				return apiError(http.StatusUnsupportedMediaType, err)
			}
		}
		return route(w, r)
	}
}

// wantJSON accepts a Content-Type of application/json, with parameters or not.
func wantJSON(contentType string) error {
	if contentType == "" {
		return errors.New("a POST must be sent with Content-Type: application/json, even without a body")
	}
	media, _, err := mime.ParseMediaType(contentType)
	if err != nil || media != "application/json" {
		return fmt.Errorf("a POST must be sent with Content-Type: application/json, not %q", clip(contentType))
	}
	return nil
}

// clip bounds what an error repeats of a header a client chose.
func clip(s string) string {
	const most = 64
	if len(s) > most {
		return s[:most] + "..."
	}
	return s
}
