package waitingroom

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// askHandoffAt asks for a code for cookie's place at target, as a JSON client does,
// and returns the link and the QR code ("" when there is none).
func (tr *testRoom) askHandoffAt(target, cookie string, headers ...string) (link, qr string) {
	tr.t.Helper()
	w, _, seen := tr.requestWith(target, cookie, append([]string{"Accept", "application/json", token.HandoffHeader, "new"}, headers...)...)
	if seen != nil {
		tr.t.Fatal("a request for a code went to the upstream")
	}
	var a struct {
		URL string `json:"handoff_url"`
		QR  string `json:"handoff_qr"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil || a.URL == "" {
		tr.t.Fatalf("the answer to a request for a code at %.60q: %d %.200q", target, w.Code, w.Body.String())
	}
	return a.URL, a.QR
}

// What a code costs to draw is bounded whatever the address it is asked for at
// (page.MaxQRLink). A link that would be too long leaves the address's query out, so
// that the other device opens the same page without it; one whose path alone is too
// long gets no QR code, only the link. Either way the code moves the place.
func TestHandoffLinkIsBoundedWhateverTheAddress(t *testing.T) {
	long := func(n int) string { return "q=" + strings.Repeat("x", n-2) }
	for _, c := range []struct {
		what, path, query string
		wantQuery         string // the link's query before the code
		wantQR            bool
	}{
		{"a short address", "/tickets", "a=1", "a=1&", true},
		{"a 2.2 KB query", "/tickets", long(2200), "", true},
		{"an 8 KB query", "/tickets", long(8000), "", true},
		{"a 2.2 KB path", "/" + strings.Repeat("p", 2200), "a=1", "", false},
	} {
		t.Run(c.what, func(t *testing.T) {
			tr := newRoomWith(t, func(h *Handler) {})
			_, waiters := tr.fill(1)
			link, qr := tr.askHandoffAt("http://shop.example"+c.path+"?"+c.query, waiters[0])
			if c.wantQR != (qr != "") {
				t.Fatalf("a QR code drawn: %v, want %v", qr != "", c.wantQR)
			}
			if c.wantQR && len(link) > page.MaxQRLink {
				t.Fatalf("the link drawn is %d bytes, more than %d", len(link), page.MaxQRLink)
			}
			u, err := url.Parse(link)
			if err != nil || u.Path != c.path || !strings.HasPrefix(u.RawQuery, c.wantQuery+token.HandoffParam+"=") {
				t.Fatalf("the link is %.120q, want %s with the query %q and the code", link, c.path[:min(len(c.path), 20)], c.wantQuery)
			}
			w, moved, _ := tr.useCode(codeOf(t, link), "")
			if v := viewOf(t, w); v.Status != "queued" || v.Position != 1 || tr.tokenOf(moved).ID == tr.tokenOf(waiters[0]).ID {
				t.Fatalf("the link opened: %d %+v, want the place at 1 moved", w.Code, v)
			}
		})
	}
}

// BenchmarkHandoffLinkAndQR is what a code's link and QR code cost, as serveHandoff
// makes them, at a short address and at ones with a 2.2 KB and an 8 KB query string:
// about the same, since a long query is left out of the link.
func BenchmarkHandoffLinkAndQR(b *testing.B) {
	code := strings.Repeat("A", 86)
	for _, c := range []struct{ name, query string }{
		{"short", "a=1"},
		{"query_2200", "q=" + strings.Repeat("x", 2198)},
		{"query_8000", "q=" + strings.Repeat("x", 7998)},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := httptest.NewRequest(http.MethodGet, "http://shop.example/drop?"+c.query, nil)
			b.ReportAllocs()
			for b.Loop() {
				link := handoffLink(r, code)
				if len(link) > page.MaxQRLink {
					b.Fatalf("a link of %d bytes", len(link))
				}
				if _, err := page.HandoffQR(link); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
