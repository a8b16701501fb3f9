package admin

import (
	"bytes"
	"net/http"

	"github.com/caddy-waitingroom/caddy-waitingroom/assets"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
)

// dashboardHTML is the live dashboard: one self-contained page (inline CSS, JS and SVG,
// no external requests) that polls this API every second.
var dashboardHTML = func() []byte {
	b, err := assets.Files.ReadFile("dashboard.html")
	if err != nil {
		panic(err)
	}
	return b
}()

func serveDashboard(w http.ResponseWriter, r *http.Request) error {
	nonce := page.NewNonce()
	body := bytes.ReplaceAll(dashboardHTML, []byte("{{nonce}}"), []byte(nonce))
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+nonce+"'; style-src 'nonce-"+nonce+
		"'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	_, err := w.Write(body)
	return err
}
