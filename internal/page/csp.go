package page

import "crypto/rand"

// The page's Content-Security-Policy around its two nonces.
const (
	cspScript = "default-src 'none'; script-src 'nonce-"
	cspStyle  = "'; style-src 'nonce-"
	cspRest   = "'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)

// CSP is the page's Content-Security-Policy allowing nonce for its inline script and
// style.
func CSP(nonce string) string {
	return cspScript + nonce + cspStyle + nonce + cspRest
}

// A nonce is made of nonceRunes (probe.go): letters and digits. Base64's "+" and "/"
// are left out: html/template writes "+" as "&#43;", and a nonce no escaper changes
// is one a cached page can splice in as it is (see Page).

// nonceLen letters and digits carry 131 bits, as many characters as a 128-bit base64
// nonce.
const nonceLen = 22

// NewNonce returns a fresh CSP nonce: the one generator of the plugin's pages (the
// waiting page, its preview, the dashboard).
func NewNonce() string {
	var nonce [nonceLen]byte
	fillNonce(nonce[:])
	return string(nonce[:])
}

// NewCSP returns a fresh nonce and the policy that allows it, in one allocation:
// the nonce is a slice of the policy.
func NewCSP() (csp, nonce string) {
	var b [len(cspScript) + nonceLen + len(cspStyle) + nonceLen + len(cspRest)]byte
	at := copy(b[:], cspScript)
	fillNonce(b[at : at+nonceLen])
	n := copy(b[at+nonceLen:], cspStyle)
	copy(b[at+nonceLen+n:], b[at:at+nonceLen])
	copy(b[at+2*nonceLen+n:], cspRest)
	csp = string(b[:])
	return csp, csp[at : at+nonceLen]
}

func fillNonce(out []byte) {
	var random [32]byte
	for n := 0; n < len(out); {
		_, _ = rand.Read(random[:])
		for _, b := range random {
			// 248 is the largest multiple of 62 a byte holds: below it, b%62 is
			// uniform.
			if b < 248 && n < len(out) {
				out[n] = nonceRunes[b%62]
				n++
			}
		}
	}
}

// Fields are the header fields of a page whose policy is csp.
func Fields(csp string) [3]Field {
	return [3]Field{
		{"Content-Type", "text/html; charset=utf-8"},
		{"Content-Security-Policy", csp},
		{"Referrer-Policy", "no-referrer"},
	}
}
