package waitingroom

import (
	"net/url"
	"strings"
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
)

// browserHost is the host a browser on base goes to when told Location loc, by the
// WHATWG URL rules for http(s) that Go's url package does not apply: tabs and
// newlines are dropped anywhere, leading and trailing controls and spaces trimmed,
// and a backslash is a slash.
func browserHost(t *testing.T, base, loc string) string {
	t.Helper()
	loc = strings.Trim(loc, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f ")
	loc = strings.NewReplacer("\t", "", "\n", "", "\r", "", `\`, "/").Replace(loc)
	b, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := url.Parse(loc)
	if err != nil {
		return "unparsable: " + err.Error()
	}
	return b.ResolveReference(ref).Host
}

// hostilePaths are request targets whose path a naive redirect turns into another
// site's address: scheme-relative (//), backslashes browsers read as slashes, encoded
// slashes, and absolute-form targets naming another host.
var hostileTargets = []struct{ name, target string }{
	{"two slashes", "http://shop.example//evil.example/"},
	{"three slashes", "http://shop.example///evil.example/"},
	{"many slashes and a query", "http://shop.example/////evil.example/x?y=1"},
	{"slash backslash", `http://shop.example/\evil.example/`},
	{"slash backslash slash", `http://shop.example/\/evil.example/`},
	{"backslashes", `http://shop.example/\\evil.example/`},
	{"encoded slash", "http://shop.example/%2Fevil.example/"},
	{"encoded slashes", "http://shop.example/%2F%2Fevil.example/"},
	{"encoded backslash", "http://shop.example/%5Cevil.example/"},
	{"slash encoded backslash", "http://shop.example//%5Cevil.example/"},
	{"encoded tab", "http://shop.example/%09/evil.example/"},
	{"dot segment", "http://shop.example/.//evil.example/"},
	{"path-form two slashes", "//evil.example/"},
	{"path-form slash backslash", `/\evil.example/`},
	{"absolute-form other host", "http://evil.example/tickets"},
	{"absolute-form other host two slashes", "http://evil.example//evil.example/"},
	{"absolute-form https", "https://evil.example//evil.example/?a=1"},
}

// TestProofRedirectStaysOnTheSite: a browser that brings its proof in the address is
// sent back to the address without it (seeClean), admitted or queued; whatever the
// path, that Location is a path on the site, never another site's address.
func TestProofRedirectStaysOnTheSite(t *testing.T) {
	tr := newProofRoom(t, 1, 8)
	for _, tc := range hostileTargets {
		t.Run(tc.name, func(t *testing.T) {
			c, bits := tr.challengeOf()
			sep := "?"
			if strings.Contains(tc.target, "?") {
				sep = "&"
			}
			a := tr.proofVisit(proofVisit{requestTarget: tc.target + sep + "waiting_room_proof=" + url.QueryEscape(solveProof(t, c, bits)), accept: "text/html"})
			loc := a.w.Header().Get("Location")
			if a.w.Code != 303 || a.cookie == "" {
				t.Fatalf("%s: %d, cookie %q, want 303 with a cookie", tc.target, a.w.Code, a.cookie)
			}
			if !strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "//") || strings.ContainsAny(loc, "\\\t\r\n") ||
				strings.Contains(loc, "waiting_room_proof") {
				t.Fatalf("%s: Location %q is not a plain path on the site", tc.target, loc)
			}
			if host := browserHost(t, "https://shop.example/tickets", loc); host != "shop.example" {
				t.Fatalf("%s: Location %q takes a browser to %q", tc.target, loc, host)
			}
		})
	}
}

// TestSameSiteTarget: the one function every redirect goes through, on paths no HTTP
// parser lets in (raw controls and backslashes) as well as the ones it does.
func TestSameSiteTarget(t *testing.T) {
	for _, tc := range []struct{ path, query, want string }{
		{"/tickets", "a=1&b=2", "/tickets?a=1&b=2"},
		{"/tickets", "", "/tickets"},
		{"", "", "/"},
		{"", "a=1", "/?a=1"},
		{"//evil.example/", "", "/evil.example/"},
		{"///evil.example/x", "q=1", "/evil.example/x?q=1"},
		{`/\evil.example/`, "", "/evil.example/"},
		{`/\/\evil.example/`, "", "/evil.example/"},
		{"/\t/evil.example/", "", "/evil.example/"},
		{"/\r\n//evil.example/", "", "/evil.example/"},
		{" //evil.example/", "", "/evil.example/"},
		{"evil.example/", "", "/evil.example/"},
		{`/a\b`, "", "/a%5Cb"},
		{"/a\tb\nc", "x=\r\n", "/a%09b%0Ac?x=%0D%0A"},
		{"/%2F/evil.example/", "", "/%2F/evil.example/"},
	} {
		got := page.SameSiteTarget(tc.path, tc.query)
		if got != tc.want {
			t.Errorf("page.SameSiteTarget(%q, %q) = %q, want %q", tc.path, tc.query, got, tc.want)
		}
		if host := browserHost(t, "https://shop.example/", got); host != "shop.example" {
			t.Errorf("page.SameSiteTarget(%q, %q) = %q takes a browser to %q", tc.path, tc.query, got, host)
		}
	}
}
