package waitingroom

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Cookie configures the room's visitor cookie. There is one cookie per room.
type Cookie struct {
	// Name of the cookie. Default: "waiting_room_" followed by the room name (letters,
	// digits, "-" and "_" kept, anything else replaced by "_").
	Name string `json:"name,omitempty"`

	// Domain attribute, to share the cookie with subdomains. Default: none (host only).
	Domain string `json:"domain,omitempty"`

	// Path attribute. Default: "/".
	Path string `json:"path,omitempty"`

	// SameSite attribute: "lax", "strict" or "none" ("none" needs Secure). Default: lax.
	SameSite string `json:"same_site,omitempty"`

	// Secure forces the Secure attribute on (true) or off (false). Default: set when the
	// request came over TLS.
	Secure *bool `json:"secure,omitempty"`

	// HTTPOnly keeps the cookie away from page scripts. Default: true.
	HTTPOnly *bool `json:"http_only,omitempty"`

	sameSite http.SameSite
	// The parts of the Set-Cookie line that are the same for every visitor, checked
	// and formatted by net/http once, in setDefaults (see set).
	scope    string // "; Path=/" and "; Domain=...", as net/http writes them
	httpOnly string // "; HttpOnly" or nothing
	site     string // "; SameSite=Lax" and the like
}

func (c *Cookie) setDefaults(room string) {
	if c.Name == "" {
		c.Name = "waiting_room_" + cookieSafe(room)
	}
	if c.Path == "" {
		c.Path = "/"
	}
	if c.SameSite == "" {
		c.SameSite = "lax"
	}
	if c.HTTPOnly == nil {
		on := true
		c.HTTPOnly = &on
	}
	switch strings.ToLower(c.SameSite) {
	case "strict":
		c.sameSite = http.SameSiteStrictMode
	case "none":
		c.sameSite = http.SameSiteNoneMode
	default:
		c.sameSite = http.SameSiteLaxMode
	}
	prefix := c.Name + "="
	c.scope = strings.TrimPrefix((&http.Cookie{Name: c.Name, Path: c.Path, Domain: c.Domain}).String(), prefix)
	c.site = strings.TrimPrefix((&http.Cookie{Name: c.Name, SameSite: c.sameSite}).String(), prefix)
	c.httpOnly = ""
	if *c.HTTPOnly {
		c.httpOnly = "; HttpOnly"
	}
}

func (c *Cookie) validate() error {
	if c.Name != "" && cookieSafe(c.Name) != c.Name {
		return fmt.Errorf("name %q: only letters, digits, '-' and '_' are allowed", c.Name)
	}
	switch strings.ToLower(c.SameSite) {
	case "", "lax", "strict":
	case "none":
		if c.Secure != nil && !*c.Secure {
			return fmt.Errorf("same_site none needs secure")
		}
	default:
		return fmt.Errorf("same_site must be lax, strict or none, got %q", c.SameSite)
	}
	return nil
}

// cookieSafe keeps the characters that need no quoting in a cookie name.
func cookieSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
}

// value returns the room cookie's value in r, if any.
func (c *Cookie) value(r *http.Request) string {
	// Not r.Cookie: that parses every cookie of the request into a slice; the admitted
	// hot path only needs ours.
	for _, line := range r.Header["Cookie"] {
		for len(line) > 0 {
			var part string
			part, line, _ = strings.Cut(line, ";")
			part = strings.TrimSpace(part)
			name, val, ok := strings.Cut(part, "=")
			if ok && name == c.Name {
				return strings.Trim(val, `"`)
			}
		}
	}
	return ""
}

// set writes the cookie carrying value onto w, living until expires (or deleting it
// when value is empty). The line is the one http.SetCookie writes for the same cookie,
// built in one allocation: every new visitor pays for it, and SetCookie's checks of
// the name, path and domain were done once in setDefaults, while value is a token,
// base64url, with nothing to escape.
func (c *Cookie) set(w http.ResponseWriter, r *http.Request, value []byte, expires time.Time) {
	secure := r.TLS != nil || c.sameSite == http.SameSiteNoneMode
	if c.Secure != nil {
		secure = *c.Secure
	}
	var b strings.Builder
	b.Grow(len(c.Name) + 1 + len(value) + len(c.scope) + len("; Expires=") + len(http.TimeFormat) +
		len(c.httpOnly) + len("; Secure") + len(c.site))
	b.WriteString(c.Name)
	b.WriteByte('=')
	b.Write(value)
	b.WriteString(c.scope)
	if len(value) == 0 {
		b.WriteString("; Max-Age=0")
	} else {
		var date [len(http.TimeFormat)]byte
		b.WriteString("; Expires=")
		b.Write(appendHTTPDate(date[:0], expires))
	}
	b.WriteString(c.httpOnly)
	if secure {
		b.WriteString("; Secure")
	}
	b.WriteString(c.site)
	// "Set-Cookie" is canonical: Header.Add would canonicalize it again.
	hdr := w.Header()
	hdr["Set-Cookie"] = append(hdr["Set-Cookie"], b.String())
}

// appendHTTPDate appends t as http.TimeFormat does ("Mon, 02 Jan 2006 15:04:05 GMT"),
// for years 1000 to 9999, at a tenth of the cost of time.Time.AppendFormat (a
// general layout interpreter): the Expires of every new visitor's cookie. net/http
// formats its Date header the same way.
func appendHTTPDate(dst []byte, t time.Time) []byte {
	const days, months = "SunMonTueWedThuFriSat", "JanFebMarAprMayJunJulAugSepOctNovDec"
	t = t.UTC()
	year, month, day := t.Date()
	hour, minute, second := t.Clock()
	wd, mo := days[3*t.Weekday():], months[3*(month-1):]
	two := func(dst []byte, n int) []byte { return append(dst, byte('0'+n/10), byte('0'+n%10)) }
	dst = append(dst, wd[0], wd[1], wd[2], ',', ' ')
	dst = two(dst, day)
	dst = append(dst, ' ', mo[0], mo[1], mo[2], ' ')
	dst = two(two(dst, year/100), year%100)
	dst = append(dst, ' ')
	dst = two(dst, hour)
	dst = append(dst, ':')
	dst = two(dst, minute)
	dst = append(dst, ':')
	dst = two(dst, second)
	return append(dst, " GMT"...)
}
