package token

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// The room mints its cookie itself; it must be the header net/http writes for the
// same cookie, for every configuration.
func TestMintedCookieIsNetHTTPs(t *testing.T) {
	on, off := true, false
	configs := []Cookie{
		{},
		{Name: "ticket", Path: "/shop", Domain: "example.com", SameSite: "strict"},
		{Domain: ".example.com", SameSite: "none"},
		{Path: "/a;b\x01c", Domain: "not a domain!", HTTPOnly: &off},
		{Secure: &on, SameSite: "lax"},
		{Secure: &off, HTTPOnly: &on},
	}
	keys := NewKeyring("shop", [][]byte{[]byte("secret")})
	for _, cfg := range configs {
		cfg.SetDefaults("shop ünïcode")
		for _, tlsOn := range []bool{false, true} {
			for _, expires := range []time.Time{
				time.Unix(1_800_000_000, 0), time.Date(2026, 2, 3, 4, 5, 6, 7, time.FixedZone("X", 3600)),
			} {
				r := httptest.NewRequest(http.MethodGet, "http://shop.example/", nil)
				if tlsOn {
					r.TLS = &tls.ConnectionState{}
				}
				value := keys.Seal(Token{State: queue.Queued, ID: queue.NewVisitorID(), Since: expires, Expires: expires})
				got := httptest.NewRecorder()
				cfg.Set(got, r, []byte(value), expires)

				secure := tlsOn || cfg.sameSite == http.SameSiteNoneMode
				if cfg.Secure != nil {
					secure = *cfg.Secure
				}
				want := httptest.NewRecorder()
				http.SetCookie(want, &http.Cookie{Name: cfg.Name, Value: value, Path: cfg.Path, Domain: cfg.Domain,
					HttpOnly: *cfg.HTTPOnly, SameSite: cfg.sameSite, Secure: secure, Expires: expires})
				if g, w := got.Header().Values("Set-Cookie"), want.Header().Values("Set-Cookie"); len(g) != 1 || g[0] != w[0] {
					t.Errorf("cookie %+v over TLS %v:\n got %q\nwant %q", cfg, tlsOn, g, w)
				}
			}
		}
	}
}
