package page

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// The answers the room writes itself, each with the headers it needs: what a waiter
// is told (JSON or the page), a challenge, a hand-off code, a clean redirect, a key
// refused. Every one is private to its visitor (no-store) and, as JSON, data that is
// never a document.

// The fields of every answer that is its visitor's alone, and of a JSON answer: data,
// never a document, which varies on what the client asked for. Each answer sets its
// own in one SetHeader call: one allocation.
var (
	noStore    = Field{"Cache-Control", "no-store"}
	noSniff    = Field{"X-Content-Type-Options", "nosniff"}
	noReferrer = Field{"Referrer-Policy", "no-referrer"}
	jsonType   = Field{"Content-Type", "application/json"}
	jsonPolicy = Field{"Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'"}
	jsonVary   = Field{"Vary", "Accept, Accept-Language"}
)

// Answer writes what a visitor is told, v, with status code: JSON when the client
// prefers it, else the waiting page pw renders in lang for a room in mode, gzipped
// when gzip. Each answer adds what it varies on: the page on Accept-Encoding too.
func Answer(w http.ResponseWriter, r *http.Request, code int, v View, pw *Writer, lang, mode string, gzip bool) error {
	SetHeader(w.Header(), noStore, Field{"Retry-After", strconv.Itoa(v.RefreshSeconds)}, noSniff, noReferrer)
	if PrefersJSON(r.Header.Get("Accept")) {
		SetHeader(w.Header(), jsonType, jsonPolicy, jsonVary)
		w.WriteHeader(code)
		// An answer with its draw_url fits; one with a receipt grows it.
		var buf [384]byte
		_, err := w.Write(append(v.AppendJSON(buf[:0]), '\n')) // as json.Encoder writes it
		return err
	}
	csp, nonce := NewCSP()
	data := v.Data(lang, mode, nonce)
	return pw.Write(w, code, csp, &data, gzip)
}

// ErrRendering is AnswerChallenge's error when the page could not be rendered, before
// anything was written.
var ErrRendering = errors.New("rendering the challenge page")

// AnswerChallenge answers a new visitor of room with a challenge of bits, with
// status code: the page that solves it, in lang, or JSON.
func AnswerChallenge(w http.ResponseWriter, r *http.Request, code int, room, lang, challenge string, bits int) error {
	SetHeader(w.Header(), noStore, noSniff, noReferrer)
	if PrefersJSON(r.Header.Get("Accept")) {
		SetHeader(w.Header(), jsonType, jsonPolicy, jsonVary)
		w.WriteHeader(code)
		var buf [160]byte
		_, err := w.Write(append(AppendChallengeJSON(buf[:0], room, challenge, bits), '\n'))
		return err
	}
	csp, nonce := NewCSP()
	body, err := RenderChallenge(make([]byte, 0, 8<<10), &ChallengeData{
		Room: room, Lang: lang, Challenge: challenge, Difficulty: bits, Nonce: nonce})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRendering, err)
	}
	fields := Fields(csp)
	SetHeader(w.Header(), fields[0], fields[1], fields[2],
		Field{"Content-Length", strconv.Itoa(len(body))}, jsonVary)
	w.WriteHeader(code)
	_, err = w.Write(body)
	return err
}

// AnswerHandoff answers a request for a code for a place of room's with the code's
// link and, when the link is short enough to draw (MaxQRLink), its QR code; the
// place's status, and the seconds the code holds. A QR code that cannot be drawn is
// told to undrawn: the link alone still moves the place.
func AnswerHandoff(w http.ResponseWriter, room, status, link string, expiresIn int, undrawn func(error)) error {
	SetHeader(w.Header(), noStore, noSniff, noReferrer, jsonType, jsonPolicy, jsonVary)
	var qr string
	if len(link) <= MaxQRLink {
		var err error
		if qr, err = HandoffQR(link); err != nil {
			undrawn(err)
		}
	}
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(append(AppendHandoffJSON(make([]byte, 0, 4096), room, status, link, qr, max(expiresIn, 0)), '\n'))
	return err
}

// LinkScheme is the scheme the visitor reached the site by, for the link that carries
// a code: the code is the place, and must not travel in the clear where the visitor's
// own connection does not. It is https over TLS, and behind a TLS-terminating proxy
// that the server trusts (Caddy's trusted_proxies), https when the proxy's
// X-Forwarded-Proto (forwardedProto, its values) says so, its last value as Caddy's
// reverse proxy reads it. A client's own X-Forwarded-Proto is not heeded: Caddy trusts
// only what its trusted proxies say, and so does the room.
func LinkScheme(overTLS, viaTrustedProxy bool, forwardedProto []string) string {
	if overTLS {
		return "https"
	}
	if !viaTrustedProxy || len(forwardedProto) == 0 {
		return "http"
	}
	last := forwardedProto[len(forwardedProto)-1]
	if i := strings.LastIndexByte(last, ','); i >= 0 {
		last = last[i+1:]
	}
	if strings.EqualFold(strings.TrimSpace(last), "https") {
		return "https"
	}
	return "http"
}

// HandoffLink is the link that gives code's place to the device that opens it: this
// site (scheme and host, as the visitor reached it), at the address u the request was
// made at, without the room's own parameters, with the code added. A QR code's cost
// grows with what it holds, and the address is the client's to make as long as it
// likes, so a link that would be longer than the most drawn (MaxQRLink) leaves the
// address's query out: the other device opens the same path.
func HandoffLink(scheme, host string, u *url.URL, code string) string {
	query := token.WithoutRoomParams(u.RawQuery)
	param := token.HandoffParam + "=" + url.QueryEscape(code)
	origin := scheme + "://" + host
	if query != "" {
		if link := origin + SameSiteTarget(u.EscapedPath(), query+"&"+param); len(link) <= MaxQRLink {
			return link
		}
	}
	return origin + SameSiteTarget(u.EscapedPath(), param)
}

// SeeClean sends a browser that came with a proof, a pass or a hand-off code in its
// address u back to the same address without it, now that it has its cookie: the
// address bar, the history and the waiting page's reloads never carry a used one.
// The address is a path on this site whatever u's path or target held
// (SameSiteTarget).
func SeeClean(w http.ResponseWriter, u *url.URL) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Location", SameSiteTarget(u.EscapedPath(), token.WithoutRoomParams(u.RawQuery)))
	w.WriteHeader(http.StatusSeeOther)
}

// KeyTooLong answers a request of room's whose key is longer than the room takes:
// 400, saying so, as JSON or text. Nothing was stored or counted for it.
func KeyTooLong(w http.ResponseWriter, r *http.Request, room string) error {
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Vary", "Accept")
	if PrefersJSON(r.Header.Get("Accept")) {
		hdr.Set("Content-Type", "application/json")
		hdr.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
		w.WriteHeader(http.StatusBadRequest)
		return json.NewEncoder(w).Encode(struct {
			Room        string `json:"room"`
			Error       string `json:"error"`
			MaxKeyBytes int    `json:"max_key_bytes"`
		}{room, "key_too_long", token.MaxKey})
	}
	hdr.Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusBadRequest)
	_, err := fmt.Fprintf(w, "The account this request is for is identified by a key longer than %d bytes, which this waiting room does not take.\n", token.MaxKey)
	return err
}
