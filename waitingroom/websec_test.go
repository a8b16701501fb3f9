package waitingroom

import (
	"encoding/base64"
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// canary is in every hostile input below: whatever escaping an encoder might apply, a
// page or JSON that reflects any of that input carries it, and none may.
const canary = "wrxss7q"

// hostileInput is one request made hostile in one place.
type hostileInput struct {
	name   string
	path   string // decoded path, as a server sees it
	query  string // raw query
	header string // header to set ("Host" sets the request's host)
	value  string
}

var hostileInputs = []hostileInput{
	{name: "path script", path: "/<script>alert('" + canary + "')</script>"},
	{name: "path attribute break", path: `/"><img src=x onerror=alert('` + canary + `')>`},
	{name: "path protocol-relative", path: "//evil.example/" + canary},
	{name: "path javascript", path: "/javascript:alert('" + canary + "')"},
	{name: "path quote and backslash", path: `/';alert(1)//\u2028` + canary + `\`},
	{name: "query script", path: "/tickets", query: "q=<script>" + canary + "</script>"},
	{name: "query next", path: "/tickets", query: "next=https://evil.example/" + canary},
	{name: "query redirect protocol-relative", path: "/tickets", query: "redirect=//evil.example/" + canary + "&return_to=javascript:alert(1)"},
	{name: "query attribute break", path: "/tickets", query: `x="><svg onload=alert('` + canary + `')>`},
	{name: "query closes json", path: "/tickets", query: `s=</script><script>` + canary + `</script>`},
	{name: "accept-language script", header: "Accept-Language", value: `en"><script>` + canary + `</script>`},
	{name: "accept-language tag", header: "Accept-Language", value: `<img src=x onerror=alert('` + canary + `')>;q=1, ko;q=0.5`},
	{name: "accept-language attribute", header: "Accept-Language", value: `ko-KR" onload="` + canary},
	{name: "user-agent", header: "User-Agent", value: `Mozilla/5.0 <script>` + canary + `</script>`},
	{name: "referer", header: "Referer", value: `https://evil.example/"><script>` + canary + `</script>`},
	{name: "referer javascript", header: "Referer", value: "javascript:alert('" + canary + "')"},
	{name: "x-forwarded-host", header: "X-Forwarded-Host", value: `evil.example"><script>` + canary + `</script>`},
	{name: "x-forwarded-uri", header: "X-Forwarded-Uri", value: "https://evil.example/" + canary},
	{name: "x-original-url", header: "X-Original-URL", value: "//evil.example/" + canary},
	{name: "origin", header: "Origin", value: "https://evil.example/" + canary},
	{name: "host", header: "Host", value: `evil.example"><script>` + canary + `</script>`},
	{name: "bad room cookie", header: "Cookie", value: `other=1; {room}="><script>` + canary + `</script>`},
}

// hostileRequest is a GET for the waiting room whose cookie is named cookie, made
// hostile as in says, asking for accept.
func hostileRequest(in hostileInput, accept, cookie string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "http://shop.example/tickets", nil)
	if in.path != "" {
		r.URL.Path, r.URL.RawPath = in.path, ""
	}
	r.URL.RawQuery = in.query
	r.RequestURI = r.URL.RequestURI()
	switch in.header {
	case "":
	case "Host":
		r.Host = in.value
	default:
		r.Header.Set(in.header, strings.ReplaceAll(in.value, "{room}", cookie))
	}
	r.Header.Set("Accept", accept)
	return r
}

// serveHostile sends in to the room and returns what came back.
func (tr *testRoom) serveHostile(in hostileInput, accept string) *httptest.ResponseRecorder {
	tr.t.Helper()
	w := httptest.NewRecorder()
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		tr.t.Fatalf("%s: a new visitor to a full room reached the upstream", in.name)
		return nil
	})
	if err := tr.h.ServeHTTP(w, hostileRequest(in, accept, tr.h.Cookie.Name), next); err != nil {
		tr.t.Fatal(err)
	}
	return w
}

const (
	acceptHTML = "text/html,application/xhtml+xml,*/*;q=0.8"
	acceptJSON = "application/json"
)

// answers are the three ways a visitor is answered without being let through, each
// rendering the request given as a page or JSON.
func answers(t *testing.T) map[string]func(in hostileInput, accept string) *httptest.ResponseRecorder {
	queued := newTestRoom(t, 1)
	queued.visit("", "") // the only slot: everyone after waits
	rejected := newTestRoomWith(t, 1, func(h *Handler) { h.Mode = queue.ModeReject })
	rejected.visit("", "")
	unavailable := newTestRoomWith(t, 1, func(h *Handler) { h.Fail = failClosed })
	return map[string]func(hostileInput, string) *httptest.ResponseRecorder{
		"queued":   queued.serveHostile,
		"rejected": rejected.serveHostile,
		// What a new visitor gets while the store is down and the room fails closed.
		"unavailable": func(in hostileInput, accept string) *httptest.ResponseRecorder {
			w := httptest.NewRecorder()
			view, s := unavailable.h.room.UnavailableView(unavailable.clock.Now())
			if err := unavailable.h.respond(w, hostileRequest(in, accept, unavailable.h.Cookie.Name), http.StatusServiceUnavailable, view, s); err != nil {
				t.Fatal(err)
			}
			return w
		},
	}
}

// Nothing a request carries (path, query, headers, Host, cookies) is reflected in the
// waiting page, the "sold out" page, the "unavailable" page, their JSON or their
// headers: not unescaped, and not escaped either, so no encoding context can be broken.
func TestNoRequestInputReflected(t *testing.T) {
	for state, serve := range answers(t) {
		for _, in := range hostileInputs {
			for _, accept := range []string{acceptHTML, acceptJSON} {
				w := serve(in, accept)
				body := w.Body.String()
				where := state + ", " + in.name + ", Accept " + accept
				if strings.Contains(body, "<html") != (accept == acceptHTML) {
					t.Fatalf("%s: wrong kind of answer: %.200q", where, body)
				}
				for _, text := range []string{body, html.UnescapeString(body), jsonUnescape(body)} {
					if strings.Contains(strings.ToLower(text), canary) {
						t.Errorf("%s: the answer reflects the input: %s", where, around(text, canary))
					}
				}
				for k, vs := range w.Header() {
					for _, v := range vs {
						if strings.Contains(v, canary) || strings.Contains(v, "evil.example") {
							t.Errorf("%s: header %s reflects the input: %q", where, k, v)
						}
					}
				}
				if accept == acceptJSON {
					var v map[string]any
					if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
						t.Errorf("%s: JSON answer does not parse: %v", where, err)
					}
				}
			}
		}
	}
}

// jsonUnescape undoes \u escapes and the like, as a script reading the JSON would.
func jsonUnescape(s string) string {
	var out string
	if json.Unmarshal([]byte(`"`+strings.NewReplacer(`"`, `\"`, "\n", `\n`).Replace(s)+`"`), &out) != nil {
		return s
	}
	return out
}

func around(s, sub string) string {
	i := strings.Index(strings.ToLower(s), sub)
	return s[max(i-60, 0):min(i+len(sub)+60, len(s))]
}

// The page goes nowhere but its own URL: when admitted it loads location.href (less
// its fragment) with a GET, polls and opens its WebSocket there, and "join again"
// links to it. No query parameter, header or Referer can name a target, so
// ?next=https://evil.example or a //evil.example/ path is no open redirect.
func TestReloadTargetIsThePagesOwnURL(t *testing.T) {
	tr := newTestRoom(t, 1)
	tr.visit("", "")
	var redirects []hostileInput
	for _, in := range hostileInputs {
		if strings.Contains(in.path+in.query+in.value, "evil.example") || strings.Contains(in.path+in.query, "javascript:") {
			redirects = append(redirects, in)
		}
	}
	if len(redirects) < 6 {
		t.Fatalf("only %d redirect-shaped inputs", len(redirects))
	}
	for _, in := range redirects {
		for _, accept := range []string{acceptHTML, acceptJSON} {
			w := tr.serveHostile(in, accept)
			body := w.Body.String()
			if w.Code >= 300 && w.Code < 400 || w.Header().Get("Location") != "" || w.Header().Get("Refresh") != "" {
				t.Fatalf("%s: the room redirected: %d, Location %q, Refresh %q", in.name, w.Code, w.Header().Get("Location"), w.Header().Get("Refresh"))
			}
			for _, bad := range []string{"evil.example", "javascript:"} {
				if strings.Contains(body, bad) {
					t.Errorf("%s: the answer names %s: %s", in.name, bad, around(body, bad))
				}
			}
			if accept == acceptJSON {
				continue
			}
			// The no-JavaScript reload names no URL, so it reloads the page itself.
			for _, m := range regexp.MustCompile(`(?i)<meta http-equiv="refresh" content="([^"]*)"`).FindAllStringSubmatch(body, -1) {
				if !regexp.MustCompile(`^\d+$`).MatchString(m[1]) {
					t.Errorf("%s: meta refresh %q names a target", in.name, m[1])
				}
			}
			// No <base> to re-root relative URLs, no form to post elsewhere, and the only
			// links are the empty "join again" one (the page's own URL) and the room's
			// draw page, which the configuration names.
			for _, tag := range []string{"<base", "<form", "<iframe"} {
				if strings.Contains(strings.ToLower(body), tag) {
					t.Errorf("%s: the page has a %s element", in.name, tag)
				}
			}
			for _, m := range regexp.MustCompile(`\b(href|src|action)="([^"]*)"`).FindAllStringSubmatch(body, -1) {
				if m[0] != `href=""` && m[0] != `href="data:,"` && m[0] != `href="`+page.DefaultDrawPage(tr.h.Name)+`"` {
					t.Errorf("%s: the page points at %s", in.name, m[0])
				}
			}
		}
	}

	// Where the script navigates, polls and connects: url is the page's own address,
	// set once, and the script reads nothing else a visitor could be sent with.
	body := tr.serveHostile(redirects[0], acceptHTML).Body.String()
	start := strings.Index(body, "<script nonce=")
	if start < 0 {
		t.Fatal("the waiting page has no script")
	}
	script := body[start:]
	if !strings.Contains(script, `function strip(u, name) { return u.replace(new RegExp("([?&])" + name + "=[^&]*(&|$)"), function (m, a, b) { return b ? a : ""; }); }`) ||
		!strings.Contains(script, `var url = strip(strip(location.href.split("#")[0], "waiting_room_pass"), "waiting_room_handoff");`) ||
		!strings.Contains(script, `var wsURL = url.replace(/^http/, "ws")`) {
		t.Fatal("the page's URL no longer comes from location.href: check where it comes from and update this test")
	}
	if n := len(regexp.MustCompile(`\burl\s*=[^=]`).FindAllString(script, -1)); n != 1 {
		t.Errorf("url is assigned %d times, want once", n)
	}
	for _, nav := range regexp.MustCompile(`location\.(replace|assign)\(([^)]*)\)|location(\.href)?\s*=[^=]|window\.open\(|\.href\s*=\s*([^;]*)`).FindAllStringSubmatch(script, -1) {
		switch {
		case nav[1] != "" && nav[2] == "url":
		case nav[4] == "url":
		case strings.HasPrefix(nav[4], `"data:image/`): // the favicon of "it's your turn", not a navigation
		default:
			t.Errorf("the script navigates with %q", nav[0])
		}
	}
	for _, source := range []string{"location.search", "location.hash", "document.referrer", "URLSearchParams", "window.name", "document.cookie", "postMessage", "innerHTML", "document.write", "eval("} {
		if strings.Contains(script, source) {
			t.Errorf("the script uses %s", source)
		}
	}
}

var nonceAttr = regexp.MustCompile(`<(script|style)\b([^>]*)>`)

// The page, the "sold out" page and the "unavailable" page carry a strict CSP whose
// nonce is the one on their inline script and style (and new on every response), and
// forbid framing, sniffing, caching and sending the address on; their JSON forbids
// sniffing, caching and framing too.
func TestSecurityHeaders(t *testing.T) {
	seen := map[string]bool{}
	in := hostileInputs[0]
	for state, serve := range answers(t) {
		for i := 0; i < 10; i++ {
			w := serve(in, acceptHTML)
			h, body := w.Header(), w.Body.String()
			if h.Get("Content-Type") != "text/html; charset=utf-8" || h.Get("X-Content-Type-Options") != "nosniff" ||
				h.Get("Cache-Control") != "no-store" || h.Get("Referrer-Policy") != "no-referrer" {
				t.Fatalf("%s page headers: %v", state, h)
			}
			csp := h.Get("Content-Security-Policy")
			dirs := cspDirectives(csp)
			m := regexp.MustCompile(`^'nonce-([A-Za-z0-9+/=_-]+)'$`).FindStringSubmatch(dirs["script-src"])
			if m == nil || dirs["style-src"] != dirs["script-src"] || dirs["default-src"] != "'none'" ||
				dirs["frame-ancestors"] != "'none'" || dirs["base-uri"] != "'none'" || strings.Contains(csp, "unsafe") {
				t.Fatalf("%s page CSP %q", state, csp)
			}
			nonce := m[1]
			if raw, err := base64.RawStdEncoding.DecodeString(nonce); err != nil || len(raw) < 16 {
				t.Fatalf("%s page nonce %q is not 128 random bits", state, nonce)
			}
			if seen[nonce] {
				t.Fatalf("%s page: nonce %q served twice", state, nonce)
			}
			seen[nonce] = true
			// Every <style> and every <script> that runs carries this response's nonce
			// (the JSON state block is data, not code).
			tags := nonceAttr.FindAllStringSubmatch(body, -1)
			styles := 0
			for _, tag := range tags {
				if strings.Contains(tag[2], `type="application/json"`) {
					continue
				}
				if tag[1] == "style" {
					styles++
				}
				// html/template writes + as &#43; in an attribute; the browser reads it back.
				attr := regexp.MustCompile(`\bnonce="([^"]*)"`).FindStringSubmatch(tag[2])
				if attr == nil || html.UnescapeString(attr[1]) != nonce {
					t.Errorf("%s page: %s lacks the header's nonce %q", state, tag[0], nonce)
				}
			}
			if styles != 1 || (state != "rejected") != strings.Contains(body, "<script nonce=") {
				t.Errorf("%s page: %d styles, script %v", state, styles, strings.Contains(body, "<script nonce="))
			}
		}

		w := serve(in, acceptJSON)
		h := w.Header()
		if h.Get("Content-Type") != "application/json" || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Cache-Control") != "no-store" {
			t.Errorf("%s JSON headers: %v", state, h)
		}
		dirs := cspDirectives(h.Get("Content-Security-Policy"))
		if dirs["default-src"] != "'none'" || dirs["frame-ancestors"] != "'none'" || h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s JSON: Content-Security-Policy %q, Referrer-Policy %q; want default-src and frame-ancestors 'none', no-referrer",
				state, h.Get("Content-Security-Policy"), h.Get("Referrer-Policy"))
		}
	}
}

func cspDirectives(csp string) map[string]string {
	dirs := map[string]string{}
	for d := range strings.SplitSeq(csp, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		if name != "" {
			dirs[name] = strings.TrimSpace(value)
		}
	}
	return dirs
}

// The room's cookie stays out of page scripts (HttpOnly), off cross-site subrequests
// and posts (SameSite=Lax), and off plain HTTP once it was set over TLS (Secure).
func TestCookieAttributes(t *testing.T) {
	tr := newTestRoom(t, 1)
	for _, tc := range []struct {
		name   string
		tls    bool
		state  string
		secure bool
	}{
		{"admitted over http", false, "admitted", false},
		{"queued over http", false, "queued", false},
		{"queued over https", true, "queued", true},
	} {
		r := httptest.NewRequest(http.MethodGet, "http://shop.example/tickets", nil)
		if tc.tls {
			r = httptest.NewRequest(http.MethodGet, "https://shop.example/tickets", nil)
		}
		r.Header.Set("Accept", acceptJSON)
		w := httptest.NewRecorder()
		if err := tr.h.ServeHTTP(w, r, caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })); err != nil {
			t.Fatal(err)
		}
		cookies := w.Result().Cookies()
		if len(cookies) != 1 || cookies[0].Name != tr.h.Cookie.Name {
			t.Fatalf("%s: cookies %v", tc.name, cookies)
		}
		c := cookies[0]
		if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Secure != tc.secure || c.Path != "/" || c.Domain != "" {
			t.Errorf("%s: cookie %s; want HttpOnly, SameSite=Lax, Secure %v, Path=/, no Domain", tc.name, c, tc.secure)
		}
		if queued := strings.Contains(w.Body.String(), `"queued"`); queued != (tc.state == "queued") {
			t.Errorf("%s: answer %q", tc.name, w.Body.String())
		}
	}
}

// What the cookie cannot do: it is a bearer token. A copied queued cookie is the same
// place (two people, one place: the line does not grow and nobody behind is passed),
// and a copied admitted cookie lets its holder in for the rest of the session, on one
// slot. A revoke (or the session's end) stops every copy at once.
func TestCopiedCookieIsOnePlaceAndOneSlot(t *testing.T) {
	tr := newTestRoom(t, 1)
	_, holder := tr.visit("", "")
	_, waiter := tr.visit("", "")
	_, behind := tr.visit("", "")
	copied := waiter // the waiter hands its cookie to a friend
	if a, b := tr.queued(waiter), tr.queued(copied); a.Position != 1 || b.Position != 1 {
		t.Fatalf("a copied cookie: places %d and %d, want the same place 1", a.Position, b.Position)
	}
	if v := tr.queued(behind); v.Position != 2 {
		t.Fatalf("the waiter behind is at %d, want 2", v.Position)
	}
	if st, _ := tr.h.store.Stats(t.Context()); st.Waiting != 2 {
		t.Fatalf("%d waiting, want 2: the copy took a place of its own", st.Waiting)
	}

	// The holder checks out; the waiter is admitted, and anyone with a copy of its
	// admitted cookie gets in on the same slot.
	revoke := func(cookie string) {
		tr.respond = func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(commandHeader, "revoke")
			w.WriteHeader(http.StatusOK)
		}
		tr.visit(cookie, "")
		tr.respond = nil
		tr.step()
	}
	revoke(holder)
	w, admitted := tr.visit(waiter, "")
	if w.Body.String() != "upstream" || admitted == waiter {
		t.Fatalf("the head was not admitted: %q", w.Body.String())
	}
	copied = admitted
	for range 3 {
		if w, _ := tr.visit(copied, ""); w.Body.String() != "upstream" {
			t.Fatalf("a copy of an admitted cookie was stopped: %q", w.Body.String())
		}
	}
	if st, _ := tr.h.store.Stats(t.Context()); st.Active != 1 || st.Waiting != 1 {
		t.Fatalf("store: %d active, %d waiting; want 1 and 1", st.Active, st.Waiting)
	}

	// Revoked: the session is over for every copy, on this instance too.
	revoke(admitted)
	for _, c := range []string{admitted, copied, waiter} {
		before := tr.passed.Load()
		tr.visit(c, "application/json")
		if tr.passed.Load() != before {
			t.Fatal("a copy of a revoked cookie still got in")
		}
	}
}
