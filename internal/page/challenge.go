package page

import (
	"bytes"
	"html/template"
	"strconv"

	"github.com/caddy-waitingroom/caddy-waitingroom/assets"
)

// ChallengeData is what the proof-of-work page (assets/challenge.html) is rendered
// with: the challenge a new visitor's browser solves before it may queue.
type ChallengeData struct {
	Room       string
	Lang       string // one of Languages()
	Challenge  string // the signed challenge (internal/token)
	Difficulty int    // leading zero bits the proof's SHA-256 must start with
	Nonce      string // CSP nonce for the inline <script> and <style>
	T          map[string]string
}

// challengeTemplate is parsed at init, so a broken embedded page stops the program at
// start. It is executed per challenge, not spliced like the waiting page: a challenge
// costs a client 2^difficulty hashes, and the page's render is not what a surge of
// visitors who do that work is bound by (docs/proof-of-work.md has the figures).
var challengeTemplate = template.Must(template.New("challenge.html").ParseFS(assets.Files, "challenge.html"))

// RenderChallenge appends the challenge page for data to dst; T defaults to the
// catalog's texts for data.Lang.
func RenderChallenge(dst []byte, data *ChallengeData) ([]byte, error) {
	d := *data
	if d.T == nil {
		d.T = sharedMessages(d.Lang)
	}
	buf := bytes.NewBuffer(dst)
	if err := challengeTemplate.Execute(buf, &d); err != nil {
		return dst, err
	}
	return buf.Bytes(), nil
}

// AppendChallengeJSON appends the JSON answer to a new visitor who must send a proof
// of work first: {"room":..,"status":"challenge","challenge":..,"difficulty":..}.
func AppendChallengeJSON(dst []byte, room, challenge string, difficulty int) []byte {
	dst = append(dst, `{"room":`...)
	dst = appendJSONString(dst, room)
	dst = append(dst, `,"status":"challenge","challenge":`...)
	dst = appendJSONString(dst, challenge)
	dst = append(dst, `,"difficulty":`...)
	dst = strconv.AppendInt(dst, int64(difficulty), 10)
	return append(dst, '}')
}
