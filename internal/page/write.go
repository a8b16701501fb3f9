package page

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
)

// Writer answers waiters with one room's page.
type Writer struct {
	// Page is the operator's template, or the embedded page.
	Page *Page
	// Embedded is what a failing operator template falls back to.
	Embedded *Page
	// Failed is told of each render of Page that failed (and fell back); it logs.
	Failed func(error)
}

// Write renders the page for data and writes it with code, under csp (which allows
// data.Nonce; see NewCSP). It renders into a buffer
// first so that a broken operator template falls back to the embedded page instead of
// a half-written one, and so that the page goes out with its length rather than
// chunked. When gzip is allowed (every browser allows it), the page goes out
// compressed, from bytes compressed once (see Page.RenderGzip); a page that cannot be
// spliced goes out as it is.
func (pw *Writer) Write(w http.ResponseWriter, code int, csp string, data *Data, gzip bool) error {
	buf := pageBuffers.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= maxPooledPage {
			pageBuffers.Put(buf)
		}
	}()
	var body []byte
	var err error
	gzipped := false
	if gzip {
		body, gzipped = pw.Page.RenderGzip((*buf)[:0], data)
	}
	if !gzipped {
		body, err = pw.Render((*buf)[:0], data)
	}
	*buf = body
	if err != nil {
		return err
	}
	page := Fields(csp)
	fields := [...]Field{page[0], page[1], page[2],
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
	SetHeader(w.Header(), fields[:n]...)
	w.WriteHeader(code)
	_, err = w.Write(body)
	return err
}

// Render appends the room's page for data to dst; a broken operator template falls
// back to the embedded page (and Failed is told) instead of a half-written one.
func (pw *Writer) Render(dst []byte, data *Data) ([]byte, error) {
	body, err := pw.Page.Render(dst, data)
	if err != nil {
		if pw.Failed != nil {
			pw.Failed(err)
		}
		return pw.Embedded.Render(dst, data)
	}
	return body, nil
}

// pageBuffers hold rendered pages until they are written: a page is ~11 KB (~5 KB
// gzipped), and a surge renders one per queued visitor.
var pageBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// maxPooledPage keeps an operator's huge page from pinning its buffer in the pool.
const maxPooledPage = 64 << 10

// NewWriter is the writer of a room's page: the operator's template at path, read and
// parsed now, or the embedded page when path is "". unspliced says why the template
// is rendered whole for every waiter (Page.Unspliced), nil when its pages are
// spliced; failed is told of each render of it that failed.
func NewWriter(path string, failed func(error)) (w *Writer, unspliced, err error) {
	embedded := EmbeddedPage()
	w = &Writer{Page: embedded, Embedded: embedded, Failed: failed}
	if path == "" {
		return w, nil, nil
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading template: %w", err)
	}
	if w.Page, err = NewPage(path, string(text)); err != nil {
		return nil, nil, fmt.Errorf("parsing template %s: %w", path, err)
	}
	return w, w.Page.Unspliced(), nil
}
