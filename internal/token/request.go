package token

import (
	"net/http"
	"net/url"
	"strings"
)

// What a request carries of the room's own: a pass, a proof of work, a hand-off code,
// a request for one. Each is taken out of the request as it is read, so that neither
// the upstream, the access log's URI nor the waiting page's return address sees it.
const (
	PassParam     = "waiting_room_pass"
	PassHeader    = "Waiting-Room-Pass"
	ProofParam    = "waiting_room_proof"
	ProofHeader   = "Waiting-Room-Proof"
	HandoffParam  = "waiting_room_handoff"
	HandoffHeader = "Waiting-Room-Handoff"
)

// TakePass returns the pass the request presents, if any (the header, else the query
// parameter), and takes both out of it.
func TakePass(r *http.Request) string {
	pass, _ := takeHeader(r, PassHeader)
	if raw, found := takeParam(r, PassParam); found && pass == "" {
		pass, _ = url.QueryUnescape(raw)
	}
	return pass
}

// SentProof is the proof of work a request carried, if any.
type SentProof struct {
	Text    string
	InQuery bool // it came in the address, not the header
}

// TakeProof returns the request's proof (the header, else the query parameter) and
// takes both out of it. A proof too long to be one is returned cut, so that it is
// refused without being copied.
func TakeProof(r *http.Request) SentProof {
	header, _ := takeHeader(r, ProofHeader)
	raw, inQuery := takeParam(r, ProofParam)
	if header != "" {
		return SentProof{Text: header}
	}
	if !inQuery {
		return SentProof{}
	}
	if len(raw) > 3*MaxProof {
		raw = raw[:3*MaxProof]
	}
	p, err := url.QueryUnescape(raw)
	if err != nil {
		return SentProof{InQuery: true}
	}
	return SentProof{Text: p, InQuery: true}
}

// TakeHandoff returns the hand-off code the request presents in its query, if any,
// and takes it out; found says there was one (the address is then cleaned).
func TakeHandoff(r *http.Request) (code string, found bool) {
	raw, found := takeParam(r, HandoffParam)
	if !found {
		return "", false
	}
	code, err := url.QueryUnescape(raw)
	if err != nil || code == "" {
		// An empty or badly escaped code is an invalid one, said so like any other,
		// where "" would mean none was presented.
		code = "?"
	}
	return code, true
}

// AsksHandoff reports whether the request asks for a code for its own place, and
// takes the header, which is the room's and never the shop's, out of it.
func AsksHandoff(r *http.Request) bool {
	v, ok := takeHeader(r, HandoffHeader)
	return ok && strings.EqualFold(strings.TrimSpace(v), "new")
}

// WithoutRoomParams is a query without the room's own parameters (a pass, a proof, a
// hand-off code), the others byte for byte.
func WithoutRoomParams(query string) string {
	query, _, _ = withoutParam(query, ProofParam)
	query, _, _ = withoutParam(query, PassParam)
	query, _, _ = withoutParam(query, HandoffParam)
	return query
}

// takeHeader takes the header name (canonical) out of r and returns its first value.
// It indexes the header map with the canonical name: this runs on every request that
// reaches the room, and Get would canonicalize the name again each time.
func takeHeader(r *http.Request, name string) (string, bool) {
	vs, ok := r.Header[name]
	if !ok {
		return "", false
	}
	delete(r.Header, name)
	if len(vs) == 0 {
		return "", true
	}
	return vs[0], true
}

// takeParam takes every query parameter named name out of the request's address (the
// URL and RequestURI both) and returns the first one's raw (still escaped) value. A
// request without the name in its query costs a substring search: this runs on every
// request that reaches the room, the admitted ones included.
func takeParam(r *http.Request, name string) (raw string, found bool) {
	rest, raw, found := withoutParam(r.URL.RawQuery, name)
	if !found {
		return "", false
	}
	r.URL.RawQuery = rest
	if path, _, ok := strings.Cut(r.RequestURI, "?"); ok {
		r.RequestURI = path
		if rest != "" {
			r.RequestURI += "?" + rest
		}
	}
	return raw, true
}

// withoutParam returns query without the parameters named name, the others byte for
// byte (empty ones too), and the first removed one's raw value.
func withoutParam(query, name string) (rest, raw string, found bool) {
	if !strings.Contains(query, name) {
		return query, "", false
	}
	var kept strings.Builder
	wrote := false
	for more, left := true, query; more; {
		var part string
		part, left, more = strings.Cut(left, "&")
		if key, value, _ := strings.Cut(part, "="); key == name {
			if !found {
				raw, found = value, true
			}
			continue
		}
		if wrote {
			kept.WriteByte('&')
		}
		kept.WriteString(part)
		wrote = true
	}
	if !found {
		return query, "", false
	}
	return kept.String(), raw, true
}
