package page

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/assets"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/draw"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/fairness"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// The public draw page (docs/fairness.md): for people, HTML in their language
// (assets/draw.html); for verifiers, JSON; and a closed draw's entries list. They are
// the same for everyone, so they may be cached, and hold nothing of any visitor: the
// module answers them before it reads a cookie, sets none, and counts nobody.
//
//	<page>                    the room's current draw (its FIFO page when it has none)
//	<page>/fifo               the room's FIFO page: its public key and admissions
//	<page>/<draw id>          that draw's page
//	<page>/<draw id>/entries  its entries list, one entry id a line, once closed

// drawsRoot is where the draw pages are by default: RFC 8615's place for what a site
// publishes about itself, which no shop's own page is likely to be at.
const drawsRoot = "/.well-known/waiting-room/"

// DefaultDrawPage is the draw page's path of the room named room.
func DefaultDrawPage(room string) string { return drawsRoot + url.PathEscape(room) }

// DrawPaths is where the draw page of the room named room is, from its draw_page
// setting (configured: "" for the default, "off" for none): the path as links give it
// (escaped), and as a request's URL.Path has it (unescaped); both "" when off.
func DrawPaths(configured, room string) (link, path string) {
	if configured == "off" {
		return "", ""
	}
	link = cmp.Or(configured, DefaultDrawPage(room))
	path, _ = url.PathUnescape(link) // CheckDrawPage refuses what does not unescape
	return link, path
}

// CheckDrawPage refuses a draw_page that is neither "off" nor a path of its own: it
// starts with "/", does not end with one, and has no query, fragment or "..".
func CheckDrawPage(p string) error {
	if p == "off" {
		return nil
	}
	if _, err := url.PathUnescape(p); err != nil || !strings.HasPrefix(p, "/") || len(p) < 2 || strings.HasSuffix(p, "/") ||
		strings.ContainsAny(p, "?#") || strings.Contains(p, "..") || p != strings.TrimSpace(p) {
		return fmt.Errorf("draw_page must be off or a path such as /draw, without a query or a trailing slash, got %q", p)
	}
	return nil
}

// IsDrawRequest says whether the request path is for the draw pages of a room whose
// page is at base ("" when off): its own pages, or, at the default place, another
// room's, which this room answers as not found rather than as a visitor of its own.
func IsDrawRequest(path, base string) bool {
	switch {
	case base == "" || len(path) < len(base) || path[:len(base)] != base: // every request asks: nothing made
	case len(path) == len(base) || path[len(base)] == '/':
		return true
	}
	return strings.HasPrefix(base, drawsRoot) && strings.HasPrefix(path, drawsRoot)
}

// DrawSource is where the draw pages' contents come from: the room.
type DrawSource interface {
	DrawPage(ctx context.Context, id string) (*fairness.Page, error)
	DrawEntries(ctx context.Context, id string) ([]byte, string, error)
}

// The answers' header fields. A page is shared by everyone and changes at most every
// few seconds; an entries list never changes once published.
var (
	drawPageCache    = Field{"Cache-Control", "public, max-age=5"}
	drawEntriesCache = Field{"Cache-Control", "public, max-age=31536000, immutable"}
	textType         = Field{"Content-Type", "text/plain; charset=utf-8"}
	htmlType         = Field{"Content-Type", "text/html; charset=utf-8"}
)

// AnswerDraw answers a request for the draw pages of the room whose page is at base,
// from src, in lang: GET and HEAD only; a path that names no page, or a draw the
// store does not hold, is 404.
func AnswerDraw(w http.ResponseWriter, r *http.Request, base, lang string, src DrawSource) error {
	SetHeader(w.Header(), noSniff, noReferrer)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return nil
	}
	id, entries, ok := drawPath(r.URL.Path, base)
	if !ok {
		return drawNotFound(w)
	}
	if entries {
		list, hash, err := src.DrawEntries(r.Context(), id)
		if err != nil {
			return drawError(w, err)
		}
		SetHeader(w.Header(), textType, drawEntriesCache, Field{"ETag", `"` + strings.TrimPrefix(hash, "sha256:") + `"`})
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(list))
		return nil
	}
	p, err := src.DrawPage(r.Context(), id)
	if err != nil {
		return drawError(w, err)
	}
	var body []byte
	if PrefersJSON(r.Header.Get("Accept")) {
		SetHeader(w.Header(), jsonType, jsonPolicy, jsonVary, drawPageCache)
		body = append(p.JSON, '\n')
	} else {
		csp, nonce := NewCSP()
		if body, err = RenderDraw(nil, p, lang, nonce); err != nil {
			return fmt.Errorf("rendering the draw page: %w", err)
		}
		SetHeader(w.Header(), htmlType, Field{"Content-Security-Policy", csp}, jsonVary, drawPageCache)
	}
	if r.Method == http.MethodHead {
		return nil
	}
	_, err = w.Write(body)
	return err
}

// drawPath reads a draw page's path: the draw's id ("" for the room's current one)
// and whether its entries list is asked for.
func drawPath(path, base string) (id string, entries, ok bool) {
	if path == base {
		return "", false, true
	}
	rest, found := strings.CutPrefix(path, base+"/")
	if !found {
		return "", false, false // another room's, at the default place
	}
	id, tail, _ := strings.Cut(rest, "/")
	switch {
	case draw.CheckDraw(id) != nil:
		return "", false, false
	case tail == "":
		return id, false, !strings.HasSuffix(rest, "/")
	case tail == "entries" && id != draw.FIFO:
		return id, true, true
	}
	return "", false, false
}

func drawNotFound(w http.ResponseWriter) error {
	w.Header().Set("Cache-Control", "public, max-age=5")
	http.Error(w, "no such draw", http.StatusNotFound)
	return nil
}

// drawError answers a draw the store does not hold as not found, and lets the
// module answer any other error (a store that cannot be reached) as it answers
// errors.
func drawError(w http.ResponseWriter, err error) error {
	if errors.Is(err, fairness.ErrNoDraw) {
		return drawNotFound(w)
	}
	return err
}

// drawTemplate is the draw page, parsed at init like the others.
var drawTemplate = template.Must(template.New("draw.html").Funcs(Funcs()).ParseFS(assets.Files, "draw.html"))

// drawData is what assets/draw.html is rendered with.
type drawData struct {
	*fairness.Page
	Lang, Nonce string
	// Committed is the commitment's time, as the JSON writes it ("" in FIFO).
	Committed string
	Entrants  int
	T         map[string]string
	// Reasons are the reasons' names, in the page's order; Minutes the minutes
	// with admissions, newest first, each with its counts in that order.
	Reasons []string
	Total   []int
	Minutes []drawMinute
}

type drawMinute struct {
	At string
	N  []int
}

// RenderDraw appends draw page p, in lang, with the style's nonce, to dst.
func RenderDraw(dst []byte, p *fairness.Page, lang, nonce string) ([]byte, error) {
	d := drawData{Page: p, Lang: lang, Nonce: nonce, T: sharedMessages(lang), Reasons: draw.Reasons(),
		Entrants: int(p.Entrants), Total: counts(p.Total)}
	if !p.Committed.IsZero() {
		d.Committed = p.Committed.UTC().Format(time.RFC3339)
	}
	for i := len(p.Admitted) - 1; i >= 0; i-- {
		m := p.Admitted[i]
		d.Minutes = append(d.Minutes, drawMinute{At: m.At.UTC().Format("2006-01-02 15:04 MST"), N: counts(m.ByReason)})
	}
	buf := bytes.NewBuffer(dst)
	if err := drawTemplate.Execute(buf, &d); err != nil {
		return dst, err
	}
	return buf.Bytes(), nil
}

// counts are n's counts, in the reasons' order, as the page's numbers print them.
func counts(n queue.ByReason) []int {
	out := make([]int, len(n))
	for i, c := range n {
		out[i] = int(min(c, 1<<62))
	}
	return out
}
