package waitingroom

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
)

const browserEncodings = "gzip, deflate, br, zstd"

// askPage asks for the page as the visitor with cookie, with Accept-Encoding
// encodings ("" for none), the way a browser asks.
func (tr *testRoom) askPage(cookie, encodings string) *httptest.ResponseRecorder {
	tr.t.Helper()
	r := httptest.NewRequest(http.MethodGet, "http://shop.example/tickets", nil)
	r.Header.Set("Cookie", tr.h.Cookie.Name+"="+cookie)
	r.Header.Set("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
	if encodings != "" {
		r.Header.Set("Accept-Encoding", encodings)
	}
	w := httptest.NewRecorder()
	if err := tr.h.ServeHTTP(w, r, okHandler()); err != nil {
		tr.t.Fatal(err)
	}
	return w
}

// pageBytes is the page in w as the browser reads it: inflated when it came gzipped,
// with its nonce (new in every response) blanked. It checks the framing a browser
// relies on: Content-Length, and Vary on Accept-Encoding.
func pageBytes(t *testing.T, w *httptest.ResponseRecorder) []byte {
	t.Helper()
	h, body := w.Header(), w.Body.Bytes()
	if cl := h.Get("Content-Length"); cl != strconv.Itoa(len(body)) {
		t.Fatalf("Content-Length %q for a body of %d bytes", cl, len(body))
	}
	if !strings.Contains(strings.Join(h.Values("Vary"), ","), "Accept-Encoding") {
		t.Fatalf("the page does not vary on Accept-Encoding: Vary %q", h.Values("Vary"))
	}
	switch h.Get("Content-Encoding") {
	case "":
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			t.Fatalf("inflating the page: %v", err)
		}
	default:
		t.Fatalf("Content-Encoding %q", h.Values("Content-Encoding"))
	}
	nonce := cspDirectives(h.Get("Content-Security-Policy"))["script-src"]
	nonce = strings.TrimSuffix(strings.TrimPrefix(nonce, "'nonce-"), "'")
	if len(nonce) != 22 {
		t.Fatalf("no nonce in the policy %q", h.Get("Content-Security-Policy"))
	}
	return bytes.ReplaceAll(body, []byte(nonce), []byte("NONCE"))
}

// A browser gets the page gzipped; a client that does not take gzip gets the same page
// as it is. Either way with its length, and a cache told that it varies.
func TestWaitingPageIsGzippedForBrowsers(t *testing.T) {
	tr := newTestRoom(t, 1)
	tr.visit("", "")
	_, waiter := tr.visit("", "application/json")
	gz := tr.askPage(waiter, browserEncodings)
	if gz.Header().Get("Content-Encoding") != "gzip" {
		t.Fatalf("a browser got the page with Content-Encoding %q", gz.Header().Get("Content-Encoding"))
	}
	want := pageBytes(t, gz)
	if !bytes.Contains(want, []byte(`id="wr-position"`)) {
		t.Fatalf("the gzip page is not the waiting page: %.200q", want)
	}
	for _, encodings := range []string{"", "identity", "br, zstd", "gzip;q=0, deflate", "*;q=0"} {
		w := tr.askPage(waiter, encodings)
		if ce := w.Header().Get("Content-Encoding"); ce != "" {
			t.Fatalf("Accept-Encoding %q: Content-Encoding %q", encodings, ce)
		}
		if got := pageBytes(t, w); !bytes.Equal(got, want) {
			t.Fatalf("Accept-Encoding %q: the page differs from the gzip page at byte %d", encodings, firstDiff(got, want))
		}
		if len(w.Body.Bytes()) < 2*len(gz.Body.Bytes()) {
			t.Fatalf("the gzip page is %d bytes, the page %d", gz.Body.Len(), w.Body.Len())
		}
	}

	// The JSON is what it was: never compressed, varying on what chooses it.
	r := httptest.NewRequest(http.MethodGet, "http://shop.example/tickets", nil)
	r.Header.Set("Cookie", tr.h.Cookie.Name+"="+waiter)
	r.Header.Set("Accept", "application/json")
	r.Header.Set("Accept-Encoding", browserEncodings)
	w := httptest.NewRecorder()
	if err := tr.h.ServeHTTP(w, r, okHandler()); err != nil {
		t.Fatal(err)
	}
	if h := w.Header(); h.Get("Content-Encoding") != "" || strings.Join(h.Values("Vary"), ", ") != "Accept, Accept-Language" {
		t.Fatalf("JSON headers: %v", h)
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// An operator's page that decides on the numbers cannot be compressed once, and is
// not compressed per request either: it goes out as it is, with its length.
func TestUnsplicedPageGoesOutAsItIs(t *testing.T) {
	file := filepath.Join(t.TempDir(), "mine.html")
	text := `<p>{{if lt .Position 10}}Almost there!{{else}}{{.Position}}{{end}}</p><style nonce="{{.Nonce}}"></style><script nonce="{{.Nonce}}"></script>`
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := newTestRoomWith(t, 1, func(h *Handler) { h.Template = file })
	if page, _ := page.NewPage(file, text); page.Unspliced() == nil {
		t.Fatal("the template is spliced; the test needs one that is not")
	}
	tr.visit("", "")
	_, waiter := tr.visit("", "application/json")
	w := tr.askPage(waiter, browserEncodings)
	if ce := w.Header().Get("Content-Encoding"); ce != "" {
		t.Fatalf("Content-Encoding %q", ce)
	}
	if got := pageBytes(t, w); !bytes.HasPrefix(got, []byte("<p>Almost there!</p>")) {
		t.Fatalf("page %q", got)
	}
}

// Over a real connection: the client reads exactly the page's bytes by its length,
// and a HEAD gets the headers, the length and no body.
func TestWaitingPageOverTheWire(t *testing.T) {
	tr := newTestRoom(t, 1)
	tr.visit("", "")
	_, waiter := tr.visit("", "application/json")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = tr.h.ServeHTTP(w, r, okHandler())
	}))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	defer client.CloseIdleConnections()
	ask := func(method string) (*http.Response, []byte) {
		r, _ := http.NewRequest(method, srv.URL+"/tickets", nil)
		r.Header.Set("Cookie", tr.h.Cookie.Name+"="+waiter)
		r.Header.Set("Accept", "text/html")
		r.Header.Set("Accept-Encoding", browserEncodings)
		resp, err := client.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	get, body := ask(http.MethodGet)
	if get.ContentLength != int64(len(body)) || len(get.TransferEncoding) != 0 || get.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("GET: length %d, transfer encoding %v, content encoding %q, %d bytes",
			get.ContentLength, get.TransferEncoding, get.Header.Get("Content-Encoding"), len(body))
	}
	head, body := ask(http.MethodHead)
	if head.StatusCode != http.StatusOK || head.ContentLength != get.ContentLength || len(body) != 0 ||
		head.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("HEAD: %d, length %d (GET %d), content encoding %q, %d bytes of body",
			head.StatusCode, head.ContentLength, get.ContentLength, head.Header.Get("Content-Encoding"), len(body))
	}
}
