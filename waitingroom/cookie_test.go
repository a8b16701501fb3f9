package waitingroom

import (
	"crypto/tls"
	"math/rand/v2"
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

// The cookie's Expires is formatted by hand; it must read as http.TimeFormat reads,
// for any instant of any zone a cookie may expire at.
func TestHTTPDateIsTimeFormat(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	from, to := time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Unix()
	zone := time.FixedZone("east", 13*3600)
	for range 100_000 {
		at := time.Unix(from+rng.Int64N(to-from), rng.Int64N(1e9)).In(zone)
		if got, want := string(appendHTTPDate(nil, at)), at.UTC().Format(http.TimeFormat); got != want {
			t.Fatalf("%v: got %q, want %q", at, got, want)
		}
	}
}
