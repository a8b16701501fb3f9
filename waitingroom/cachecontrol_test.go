package waitingroom

import (
	"net/http"
	"strings"
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// directives reads Cache-Control lines as a shared cache does: lowercased names, the
// value after "=", commas inside quotes kept.
func directives(lines []string) map[string]string {
	d := map[string]string{}
	for _, line := range lines {
		var parts []string
		quoted, start := false, 0
		for i := 0; i < len(line); i++ {
			switch {
			case line[i] == '"':
				quoted = !quoted
			case line[i] == ',' && !quoted:
				parts, start = append(parts, line[start:i]), i+1
			}
		}
		for _, part := range append(parts, line[start:]) {
			name, value, _ := strings.Cut(strings.TrimSpace(part), "=")
			if name != "" {
				d[strings.ToLower(strings.TrimSpace(name))] = value
			}
		}
	}
	return d
}

// sharedCacheMayStore says whether a shared cache may keep a response with these
// Cache-Control lines, and hand it (and its Set-Cookie) to others.
func sharedCacheMayStore(lines []string) bool {
	d := directives(lines)
	p, private := d["private"]
	_, noStore := d["no-store"]
	return !(private && p == "") && !noStore
}

// An upstream answer the room adds its cookie to never goes to a shared cache with it:
// whatever the upstream said (public, s-maxage, nothing), the answer is private, its
// other directives kept. An answer that already says private or no-store is left
// alone, and so is every answer the room adds no cookie to (the admitted hot path).
func TestCookieNeverRidesAPublicAnswer(t *testing.T) {
	for _, tc := range []struct {
		name     string
		upstream []string
		keep     []string // directives that must survive
	}{
		{"public", []string{"public, max-age=3600"}, []string{"max-age"}},
		{"public in capitals", []string{"Public,  Max-Age=10"}, []string{"max-age"}},
		{"s-maxage", []string{"max-age=600, s-maxage=600"}, []string{"max-age"}},
		{"two lines", []string{"public", "max-age=10, must-revalidate"}, []string{"max-age", "must-revalidate"}},
		{"quoted comma", []string{`no-cache="Set-Cookie, X-A", public`}, []string{"no-cache"}},
		{"none", nil, nil},
		{"immutable", []string{"max-age=31536000, immutable"}, []string{"max-age", "immutable"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestRoom(t, 2)
			tr.respond = func(w http.ResponseWriter, r *http.Request) {
				for _, v := range tc.upstream {
					w.Header().Add("Cache-Control", v)
				}
				_, _ = w.Write([]byte("upstream"))
			}
			check := func(what string, w http.ResponseWriter, wantCookie bool) {
				t.Helper()
				cc := w.Header().Values("Cache-Control")
				cookie := len(w.Header().Values("Set-Cookie")) > 0
				if cookie != wantCookie {
					t.Fatalf("%s: cookie set %v, want %v", what, cookie, wantCookie)
				}
				if !cookie {
					if strings.Join(cc, "\n") != strings.Join(tc.upstream, "\n") {
						t.Fatalf("%s: without a cookie Cache-Control is %q, the upstream said %q", what, cc, tc.upstream)
					}
					return
				}
				if sharedCacheMayStore(cc) {
					t.Fatalf("%s: the room's cookie rides an answer a shared cache may store: Cache-Control %q", what, cc)
				}
				d := directives(cc)
				if _, public := d["public"]; public {
					t.Fatalf("%s: Cache-Control %q still says public", what, cc)
				}
				for _, k := range tc.keep {
					if _, ok := d[k]; !ok {
						t.Fatalf("%s: Cache-Control %q lost %s", what, cc, k)
					}
				}
			}
			w, cookie := tr.visit("", "") // admitted at once: a new cookie
			check("admitted at once", w, true)
			w, _ = tr.visit(cookie, "") // within TouchEvery: no cookie
			check("admitted, touched recently", w, false)
			tr.clock.Advance(queue.TouchEvery)
			w, _ = tr.visit(cookie, "") // the touch renews the cookie
			check("admitted, touched", w, true)
			tr.visit("", "")
			_, waiter := tr.visit("", "") // queued behind two
			tr.respond = func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Waiting-Room-Command", "revoke")
				for _, v := range tc.upstream {
					w.Header().Add("Cache-Control", v)
				}
			}
			w, _ = tr.visit(cookie, "") // touched recently, then revoked: the cookie is cleared
			check("revoked", w, true)
			tr.step()
			tr.respond = func(w http.ResponseWriter, r *http.Request) {
				for _, v := range tc.upstream {
					w.Header().Add("Cache-Control", v)
				}
			}
			w, _ = tr.visit(waiter, "") // admitted from the line
			check("admitted from the line", w, true)
		})
	}
	t.Run("already private", func(t *testing.T) {
		for _, cc := range []string{"private, max-age=60", "no-store", "No-Store, public"} {
			tr := newTestRoom(t, 1)
			tr.respond = func(w http.ResponseWriter, r *http.Request) { w.Header().Set("Cache-Control", cc) }
			if w, _ := tr.visit("", ""); w.Header().Get("Cache-Control") != cc {
				t.Fatalf("upstream said %q, the answer says %q", cc, w.Header().Values("Cache-Control"))
			}
		}
	})
}
