package page

import "strings"

// SameSiteTarget is the Location of every redirect the room answers: a reference to
// path (escaped) and query on this site, whatever the request's path held. A browser
// reads a Location that starts with "//", or with "/\" (a backslash is a slash to it,
// and it drops tabs and newlines first), as another site's address, so the target
// starts with exactly one "/" and the leading run of slashes, backslashes, controls
// and spaces collapses into it; a backslash or a control byte anywhere else is
// escaped. Encoded slashes (%2F, %5C) stay as they are: a browser never decodes
// them into the address's authority.
func SameSiteTarget(path, query string) string {
	path = strings.TrimLeft(path, "/\\\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x7f ")
	var b strings.Builder
	b.Grow(1 + len(path) + 1 + len(query))
	b.WriteByte('/')
	escapeUnsafe(&b, path)
	if query != "" {
		b.WriteByte('?')
		escapeUnsafe(&b, query)
	}
	return b.String()
}

// escapeUnsafe writes s with every byte a browser would drop or reread (controls,
// space, backslash, DEL) percent-encoded.
func escapeUnsafe(b *strings.Builder, s string) {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == '\\' || c == 0x7f {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
}
