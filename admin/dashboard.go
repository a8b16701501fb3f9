package admin

import (
	"bytes"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"net/http"
)

// dashboardHTML is the live dashboard: one self-contained page (inline CSS, JS and SVG,
// no external requests) that polls this API every second.
//
//go:embed dashboard.html
var dashboardHTML []byte

func serveDashboard(w http.ResponseWriter, r *http.Request) error {
	if err := allow(r, http.MethodGet); err != nil {
		return err
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	nonce := base64.RawStdEncoding.EncodeToString(b[:])
	page := bytes.ReplaceAll(dashboardHTML, []byte("{{nonce}}"), []byte(nonce))
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+nonce+"'; style-src 'nonce-"+nonce+
		"'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	_, err := w.Write(page)
	return err
}
