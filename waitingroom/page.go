package waitingroom

import (
	"crypto/rand"
	"net/http"
	"strconv"
	"sync"

	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/assets"
)

// writePage renders the waiting page. It renders into a buffer first so that a broken
// operator template falls back to the embedded page instead of a half-written one, and
// so that the page goes out with its length rather than chunked. A client that takes
// gzip (every browser does) gets the page compressed, from bytes compressed once (see
// assets.Page.RenderGzip); a page that cannot be spliced goes out as it is.
func (h *Handler) writePage(w http.ResponseWriter, r *http.Request, code int, v view) error {
	lang := h.Lang
	if lang == "" {
		lang = assets.Negotiate(r.Header.Get("Accept-Language"))
	}
	csp, nonce := newPageCSP()
	data := h.pageData(v, lang, h.policyAt(h.clock.Now()).mode, nonce)
	buf := pageBuffers.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= maxPooledPage {
			pageBuffers.Put(buf)
		}
	}()
	var body []byte
	var err error
	gzipped := false
	if acceptsGzip(r.Header["Accept-Encoding"]) {
		body, gzipped = h.page.RenderGzip((*buf)[:0], &data)
	}
	if !gzipped {
		body, err = h.renderPage((*buf)[:0], &data)
	}
	*buf = body
	if err != nil {
		return err
	}
	page := pageFields(csp)
	fields := [...]headerField{page[0], page[1], page[2],
		{"Content-Length", strconv.Itoa(len(body))},
		// Added to what the site varies on; the page is chosen by all three even when
		// it cannot be compressed, and the room's JSON is never compressed.
		{"Vary", "Accept, Accept-Language, Accept-Encoding"},
		{"Content-Encoding", "gzip"}, // last: only when gzipped
	}
	n := len(fields)
	if !gzipped {
		n--
	}
	setHeader(w.Header(), fields[:n]...)
	w.WriteHeader(code)
	_, err = w.Write(body)
	return err
}

// pageBuffers hold rendered pages until they are written: a page is ~11 KB (~5 KB
// gzipped), and a surge renders one per queued visitor.
var pageBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// maxPooledPage keeps an operator's huge page from pinning its buffer in the pool.
const maxPooledPage = 64 << 10

// pageData is what the page template gets for view v (see assets.PageData). T is left
// to the page, which uses the catalog's own.
func (h *Handler) pageData(v view, lang, mode, nonce string) assets.PageData {
	data := assets.PageData{
		Room:           v.Room,
		Lang:           lang,
		State:          v.Status,
		Mode:           mode,
		Position:       v.Position,
		Waiting:        v.Waiting,
		Active:         v.Active,
		Capacity:       v.Capacity,
		ETAKnown:       v.ETASeconds != nil,
		Progress:       progress(v.Position, v.Waiting),
		RefreshSeconds: v.RefreshSeconds,
		Lottery:        v.lottery,
		Nonce:          nonce,
	}
	if v.ETASeconds != nil {
		data.ETASeconds = *v.ETASeconds
	}
	if v.prequeue {
		data.State = "prequeue"
		data.StartsInSeconds = *v.StartsInSeconds
	}
	return data
}

// renderPage appends the room's page for data to dst; a broken operator template falls
// back to the embedded page (and is logged) instead of a half-written one.
func (h *Handler) renderPage(dst []byte, data *assets.PageData) ([]byte, error) {
	body, err := h.page.Render(dst, data)
	if err != nil {
		h.logger.Error("waiting page template failed; serving the embedded page",
			zap.String("room", h.Name), zap.String("template", h.Template), zap.Error(err))
		return h.embedded.Render(dst, data)
	}
	return body, nil
}

// The page's Content-Security-Policy around its two nonces.
const (
	cspScript = "default-src 'none'; script-src 'nonce-"
	cspStyle  = "'; style-src 'nonce-"
	cspRest   = "'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)

func pageCSP(nonce string) string {
	return cspScript + nonce + cspStyle + nonce + cspRest
}

// nonceRunes are the letters and digits a nonce is made of. Base64's "+" and "/" are
// left out: html/template writes "+" as "&#43;", and a nonce no escaper changes is
// one a cached page can splice in as it is (see assets.Page).
const nonceRunes = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// nonceLen letters and digits carry 131 bits, as many characters as the 128-bit
// base64 nonce they replace.
const nonceLen = 22

func newNonce() string {
	var nonce [nonceLen]byte
	fillNonce(nonce[:])
	return string(nonce[:])
}

// newPageCSP returns a fresh nonce and the policy that allows it, in one allocation:
// the nonce is a slice of the policy.
func newPageCSP() (csp, nonce string) {
	var b [len(cspScript) + nonceLen + len(cspStyle) + nonceLen + len(cspRest)]byte
	at := copy(b[:], cspScript)
	fillNonce(b[at : at+nonceLen])
	n := copy(b[at+nonceLen:], cspStyle)
	copy(b[at+nonceLen+n:], b[at:at+nonceLen])
	copy(b[at+2*nonceLen+n:], cspRest)
	csp = string(b[:])
	return csp, csp[at : at+nonceLen]
}

func fillNonce(out []byte) {
	var random [32]byte
	for n := 0; n < len(out); {
		_, _ = rand.Read(random[:])
		for _, b := range random {
			// 248 is the largest multiple of 62 a byte holds: below it, b%62 is
			// uniform.
			if b < 248 && n < len(out) {
				out[n] = nonceRunes[b%62]
				n++
			}
		}
	}
}
