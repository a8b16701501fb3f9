package waitingroom

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// The room writes its Set-Cookie line itself (one allocation per new visitor); a
// browser must get exactly the line http.SetCookie would have written for the same
// cookie, whatever the settings, over TLS or not, set or deleted.
func TestSetCookieLineIsNetHTTPs(t *testing.T) {
	on, off := true, false
	settings := []Cookie{
		{},
		{Path: "/shop", Domain: "example.com"},
		{Domain: ".example.com", SameSite: "strict", HTTPOnly: &off},
		{Domain: "bad domain;", Path: "/a;b\x01c"}, // net/http drops or cleans these
		{SameSite: "none"},
		{SameSite: "none", Secure: &on},
		{Secure: &off},
		{Name: "my-cookie", Secure: &on, HTTPOnly: &on},
	}
	text := newKeyring("shop", [][]byte{[]byte("secret")}).seal(token{state: Admitted, id: NewVisitorID(),
		expires: time.Unix(1_800_000_000, 0)})
	expires := time.Date(2027, 1, 15, 8, 30, 5, 0, time.FixedZone("CET", 3600))
	for _, c := range settings {
		c.setDefaults("shop")
		for _, overTLS := range []bool{false, true} {
			for _, value := range []string{text, ""} {
				r := httptest.NewRequest(http.MethodGet, "http://shop.example/", nil)
				if overTLS {
					r.TLS = &tls.ConnectionState{}
				}
				got := httptest.NewRecorder()
				c.set(got, r, []byte(value), expires)

				want := httptest.NewRecorder()
				ck := &http.Cookie{Name: c.Name, Value: value, Path: c.Path, Domain: c.Domain,
					HttpOnly: *c.HTTPOnly, SameSite: c.sameSite, Secure: overTLS || c.sameSite == http.SameSiteNoneMode}
				if c.Secure != nil {
					ck.Secure = *c.Secure
				}
				if value == "" {
					ck.MaxAge = -1
				} else {
					ck.Expires = expires
				}
				http.SetCookie(want, ck)

				if g, w := got.Header().Values("Set-Cookie"), want.Header().Values("Set-Cookie"); len(g) != 1 || len(w) != 1 || g[0] != w[0] {
					t.Errorf("%+v, TLS %v, value %q:\n got %q\nwant %q", c, overTLS, value, g, w)
				}
			}
		}
	}
}
