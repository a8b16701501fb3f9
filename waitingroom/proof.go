package waitingroom

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/push"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// Where a new visitor sends its proof of work (docs/proof-of-work.md).
const (
	proofHeader = "Waiting-Room-Proof"
	proofParam  = "waiting_room_proof"
)

// parseProofOfWork reads `proof_of_work <bits>`.
func parseProofOfWork(d *caddyfile.Dispenser) (int, error) {
	s, err := oneArg(d)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, d.Errf("proof_of_work must be a whole number of bits from 0 (off) to %d, got %q", token.MaxDifficulty, s)
	}
	if err := room.CheckProofOfWork(n); err != nil {
		return 0, d.Err(err.Error())
	}
	return n, nil
}

// sentProof is the proof a request carried, if any.
type sentProof struct {
	text    string
	inQuery bool // it came in the address, not the header
}

// takeProof takes the request's proof (the header, else the query parameter) out of
// the request, so that it never reaches the upstream, the access log's URI or the
// waiting page's return address, and returns it. A proof too long to be one is
// returned cut, so that it is refused without being copied.
func takeProof(r *http.Request) sentProof {
	header := ""
	if vals, ok := r.Header[proofHeader]; ok {
		delete(r.Header, proofHeader)
		if len(vals) > 0 {
			header = vals[0]
		}
	}
	raw, inQuery := takeParam(r, proofParam)
	if header != "" {
		return sentProof{text: header}
	}
	if !inQuery {
		return sentProof{}
	}
	if len(raw) > 3*token.MaxProof {
		raw = raw[:3*token.MaxProof]
	}
	p, err := url.QueryUnescape(raw)
	if err != nil {
		return sentProof{inQuery: true}
	}
	return sentProof{text: p, inQuery: true}
}

// wantsPage says the request is a browser's page load (GET or HEAD, HTML rather than
// JSON, not a WebSocket): one that can be sent to another address.
func wantsPage(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		!page.PrefersJSON(r.Header.Get("Accept")) && !push.IsWaitingSocket(r)
}

// seeClean sends a browser that came with its proof in the address back to the same
// address without it, now that it has its cookie: the address bar, the history and
// the waiting page's reloads never carry a used proof. The address is a path on this
// site whatever the request's path or target held (sameSiteTarget).
func (h *Handler) seeClean(w http.ResponseWriter, r *http.Request) error {
	u := r.URL
	if orig, ok := r.Context().Value(caddyhttp.OriginalRequestCtxKey).(http.Request); ok && orig.URL != nil {
		u = orig.URL
	}
	query, _, _ := withoutParam(u.RawQuery, proofParam)
	query, _, _ = withoutParam(query, passParam)
	query, _, _ = withoutParam(query, handoffParam)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Location", sameSiteTarget(u.EscapedPath(), query))
	w.WriteHeader(http.StatusSeeOther)
	return nil
}
