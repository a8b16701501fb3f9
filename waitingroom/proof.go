package waitingroom

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/push"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// Where a new visitor sends its proof of work (docs/proof-of-work.md).
const (
	proofHeader = "Waiting-Room-Proof"
	proofParam  = "waiting_room_proof"
)

// errProofReplayed is a valid proof whose challenge was answered before.
var errProofReplayed = errors.New("challenge already answered")

func checkProofOfWork(bits int) error {
	if bits < 0 || bits > token.MaxDifficulty {
		return fmt.Errorf("proof_of_work must be a number of bits from 0 (off) to %d, got %d", token.MaxDifficulty, bits)
	}
	return nil
}

// parseProofOfWork reads `proof_of_work <bits>`.
func parseProofOfWork(d *caddyfile.Dispenser) (int, error) {
	s, err := oneArg(d)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(s)
	if err != nil || checkProofOfWork(n) != nil {
		return 0, d.Errf("proof_of_work must be a whole number of bits from 0 (off) to %d, got %q", token.MaxDifficulty, s)
	}
	return n, nil
}

// patchProofOfWork reads a PATCH's proof_of_work: null restores the configured one.
func patchProofOfWork(raw json.RawMessage) (*int, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	var n int
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, inputErrorf("proof_of_work must be a whole number of bits or null, got %s", clip(raw))
	}
	if err := checkProofOfWork(n); err != nil {
		return nil, inputErrorf("%v", err)
	}
	return &n, nil
}

// difficulty is the proof of work a new visitor must send now: the admin API's
// override, else the configured one.
func (h *Handler) difficulty() int {
	if o := h.room.overrides.Load(); o != nil && o.ProofOfWork != nil {
		return *o.ProofOfWork
	}
	return h.ProofOfWork
}

// challenge stands between a new visitor and the line while proof_of_work is on: a
// visitor invited (a valid pass, or a pass bound into its cookie), or a valid proof
// offered for the first time fleet-wide, lets the visitor go on to join (done false);
// anything else gets a fresh challenge (done true, answered). clean
// says the proof came in the address of a browser's GET, which the visitor is then
// sent back to without it (seeClean) once it has its cookie.
//
// The checks cost one SHA-256 and one HMAC (token.CheckProof) before the one store
// call, the once-only check.
func (h *Handler) challenge(w http.ResponseWriter, r *http.Request, keys *token.Keyring, now time.Time, v *visit, next caddyhttp.Handler, sent sentProof, invited bool) (done, clean bool, err error) {
	bits := h.difficulty()
	if bits == 0 || invited {
		return false, false, nil // the operator's invitation stands for the work (pass.go)
	}
	if sent.text != "" {
		c, why := keys.CheckProof(sent.text, bits, now)
		if why == nil {
			first, err := h.room.store.Once(r.Context(), c.Key(), c.Expires)
			if err != nil {
				h.room.storeError("once", err)
				v.decided(visitUnavailable)
				return true, false, h.degraded(w, r, next)
			}
			if first {
				return false, sent.inQuery && wantsPage(r), nil
			}
			why = errProofReplayed
		}
		if c := h.logger.Check(zap.DebugLevel, "proof of work refused"); c != nil {
			c.Write(zap.String("room", h.Name), zap.String("reason", why.Error()))
		}
	}
	v.decided(visitChallenge)
	return true, false, h.serveChallenge(w, r, keys, bits, now)
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
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Location", sameSiteTarget(u.EscapedPath(), query))
	w.WriteHeader(http.StatusSeeOther)
	return nil
}

// serveChallenge answers a new visitor with a fresh challenge of bits: the page that
// solves it, or JSON, with the waiting page's status code.
func (h *Handler) serveChallenge(w http.ResponseWriter, r *http.Request, keys *token.Keyring, bits int, now time.Time) error {
	challenge := keys.MintChallenge(bits, now)
	page.SetHeader(w.Header(),
		field("Cache-Control", "no-store"),
		field("X-Content-Type-Options", "nosniff"),
		field("Referrer-Policy", "no-referrer"))
	if page.PrefersJSON(r.Header.Get("Accept")) {
		page.SetHeader(w.Header(),
			field("Content-Type", "application/json"),
			field("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'"),
			field("Vary", "Accept, Accept-Language"))
		w.WriteHeader(h.StatusCode)
		var buf [160]byte
		_, err := w.Write(append(page.AppendChallengeJSON(buf[:0], h.Name, challenge, bits), '\n'))
		return err
	}
	lang := h.Lang
	if lang == "" {
		lang = page.Negotiate(r.Header.Get("Accept-Language"))
	}
	csp, nonce := page.NewCSP()
	body, err := page.RenderChallenge(make([]byte, 0, 8<<10), &page.ChallengeData{
		Room: h.Name, Lang: lang, Challenge: challenge, Difficulty: bits, Nonce: nonce})
	if err != nil {
		return caddyhttp.Error(http.StatusInternalServerError, fmt.Errorf("rendering the challenge page: %w", err))
	}
	fields := page.Fields(csp)
	page.SetHeader(w.Header(), fields[0], fields[1], fields[2],
		field("Content-Length", strconv.Itoa(len(body))),
		field("Vary", "Accept, Accept-Language"))
	w.WriteHeader(h.StatusCode)
	_, err = w.Write(body)
	return err
}
