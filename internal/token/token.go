// Package token is what a visitor carries: the signed token in the room's cookie
// (who the visitor is, queued or admitted, since when) and the cookie itself. Verifying
// a token is a local HMAC check, the admitted visitor's whole hot path.
package token

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"sync"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// A Token is what the room's cookie carries: who the visitor is, whether it was
// admitted, and until when the Token may be believed. It is signed, never encrypted:
// nothing in it is secret, but nothing in it can be changed.
//
// Wire format, base64url without padding (version 2, what Seal writes):
//
//	version(1)=2 | state(1) | flags(1) | visitor id(16) | since unix seconds(8) |
//	expiry unix seconds(8) | waited seconds(4) | HMAC-SHA256(32)
//
// flags bit 0 says the visitor came in with a pass (see Pass), bit 1 that the place
// is a key's (see Keyed); the other bits are zero. waited is how long an admitted visitor waited in line, 0xFFFFFFFF when not
// known. Version 1 (no flags, no waited) is still accepted, so the cookies given out
// before an upgrade keep their places and sessions:
//
//	version(1)=1 | state(1) | visitor id(16) | since(8) | expiry(8) | HMAC-SHA256(32)
//
// The MAC covers a domain label, the room name and the body before it, so a cookie of
// one room is worthless in another, and a bit flipped anywhere fails verification.
type Token struct {
	State queue.State // Queued or Admitted
	ID    queue.VisitorID
	// Since is when the visitor joined the queue (Queued) or was admitted (Admitted);
	// it survives reissues, so the wait can be measured at admission on any instance.
	Since   time.Time
	Expires time.Time
	// Pass says the visitor came in with a valid pass: in an invite_only room they may
	// stay in line and in, and later requests need not carry the pass.
	Pass bool
	// Keyed says the visitor id is a key's (a room with `key`): such a place never
	// follows another key's log-in, where a place taken without a key does. Only a
	// room with `key` sets it, and only this version reads it, so a fleet that has
	// not set `key` gives out cookies every earlier version still opens.
	Keyed bool
	// Waited is how long an admitted visitor waited in line (0 when admitted at join),
	// whole seconds; negative when not known (a version 1 cookie).
	Waited time.Duration
}

// QueuedLife bounds how long a waiter's token is believed; the store decides whether
// the place still exists (queue_ttl), so this only limits replay of old cookies.
const QueuedLife = 24 * time.Hour

// Len is the length of a token before its base64 encoding, Text after (what Seal
// writes: version 2).
const Len = tokenLen

const (
	tokenVersion = 2
	tokenBody    = 1 + 1 + 1 + 16 + 8 + 8 + 4
	tokenLen     = tokenBody + sha256.Size
	Text         = (tokenLen*8 + 5) / 6 // base64url, unpadded

	v1Body = 1 + 1 + 16 + 8 + 8
	v1Len  = v1Body + sha256.Size
	v1Text = (v1Len*8 + 5) / 6

	flagPass      = 1
	flagKeyed     = 2
	waitedUnknown = 0xFFFFFFFF
)

var strictBase64 = base64.RawURLEncoding.Strict()

// Keyring signs with the first secret and accepts any of them, so a secret can be
// rotated without sending every admitted visitor back to the queue.
type Keyring struct {
	room      string
	macs      []*sync.Pool // one pool of *mac per secret; HMAC setup is not free
	label     []byte       // "waiting_room\x00" + room + "\x00"
	passLabel []byte       // see pass.go
	verified  *verifiedCache
}

func NewKeyring(room string, secrets [][]byte) *Keyring {
	k := &Keyring{room: room, label: []byte("waiting_room\x00" + room + "\x00"), passLabel: passLabel(room), verified: newVerifiedCache()}
	for _, s := range secrets {
		secret := s
		k.macs = append(k.macs, &sync.Pool{New: func() any { return &mac{h: hmac.New(sha256.New, secret)} }})
	}
	return k
}

// Seal returns the cookie value for t.
func (k *Keyring) Seal(t Token) string {
	var text [Text]byte
	return string(k.AppendSealed(text[:0], t))
}

// AppendSealed appends the cookie value for t to dst; with a dst of Text spare
// bytes on the caller's stack, sealing allocates nothing.
func (k *Keyring) AppendSealed(dst []byte, t Token) []byte {
	var raw [tokenLen]byte
	raw[0] = tokenVersion
	raw[1] = byte(t.State)
	if t.Pass {
		raw[2] |= flagPass
	}
	if t.Keyed {
		raw[2] |= flagKeyed
	}
	copy(raw[3:19], t.ID[:])
	binary.BigEndian.PutUint64(raw[19:27], uint64(t.Since.Unix()))
	binary.BigEndian.PutUint64(raw[27:35], uint64(t.Expires.Unix()))
	waited := uint32(waitedUnknown)
	if t.Waited >= 0 {
		waited = uint32(min(t.Waited/time.Second, waitedUnknown-1))
	}
	binary.BigEndian.PutUint32(raw[35:39], waited)
	k.sum(0, raw[:tokenBody], raw[tokenBody:tokenBody])
	return base64.RawURLEncoding.AppendEncode(dst, raw[:])
}

// Accepts reports whether k opens what signer seals now: whether the cookies a room
// with signer's secrets gives out are still good under k's (a new secret with the one
// signer signs with listed after it). Rooms of the same name only: the name is signed
// too.
func (k *Keyring) Accepts(signer *Keyring, now time.Time) bool {
	probe := signer.Seal(Token{State: queue.Admitted, Since: now, Expires: now.Add(time.Hour), Waited: -1})
	_, ok := k.Open(probe, now)
	return ok
}

// Open verifies a cookie value and returns its token. Anything wrong (shape, version,
// MAC under every secret, state, expiry) reports false: the request is a new visitor.
// It is the admitted visitor's hot path: a value opened before is found in the
// verified cache (verified.go), and only an admitted value seen for the first time
// allocates, the cache's entry for it.
func (k *Keyring) Open(value string, now time.Time) (Token, bool) {
	// An exact length check, not DecodedLen: the decoder skips \r and \n, so a
	// value with a line break inside would otherwise open as the Token without it.
	if len(value) != Text && len(value) != v1Text {
		return Token{}, false
	}
	var text [Text]byte
	n := copy(text[:], value)
	if n == Text {
		if t, ok := k.verified.find(value, &text, now); ok {
			return t, true
		}
	}
	var raw [tokenLen]byte
	size, body, version := tokenLen, tokenBody, byte(tokenVersion)
	if n == v1Text {
		size, body, version = v1Len, v1Body, 1
	}
	// Strict: version 2's last character carries 2 bits past the token, which a lax
	// decoder ignores, so a changed character would open as the same token.
	if m, err := strictBase64.Decode(raw[:], text[:n]); err != nil || m != size {
		return Token{}, false
	}
	if raw[0] != version {
		return Token{}, false
	}
	verified := false
	for i := range k.macs {
		if k.verify(i, raw[:body], raw[body:size]) {
			verified = true
			break
		}
	}
	if !verified {
		return Token{}, false
	}
	t := Token{State: queue.State(raw[1]), Waited: -1}
	if t.State != queue.Queued && t.State != queue.Admitted {
		return Token{}, false
	}
	f := raw[2:] // the fields after the state, as version 1 lays them out
	if version == tokenVersion {
		if raw[2]&^(flagPass|flagKeyed) != 0 {
			return Token{}, false
		}
		t.Pass, t.Keyed = raw[2]&flagPass != 0, raw[2]&flagKeyed != 0
		if w := binary.BigEndian.Uint32(raw[35:39]); w != waitedUnknown {
			t.Waited = time.Duration(w) * time.Second
		}
		f = raw[3:]
	}
	copy(t.ID[:], f[0:16])
	t.Since = time.Unix(int64(binary.BigEndian.Uint64(f[16:24])), 0)
	t.Expires = time.Unix(int64(binary.BigEndian.Uint64(f[24:32])), 0)
	if !now.Before(t.Expires) {
		return Token{}, false
	}
	if n == Text {
		k.verified.remember(value, &text, t)
	}
	return t, true
}

// mac is a pooled HMAC state with room for its input and sum: what is written to a
// hash.Hash escapes, so the caller's stack buffers are copied here rather than
// moved to the heap on every request.
type mac struct {
	h    hash.Hash
	body [tokenBody]byte
	sum  [sha256.Size]byte
}

// sum appends the MAC of body under secret i to dst.
func (k *Keyring) sum(i int, body, dst []byte) []byte {
	m := k.macs[i].Get().(*mac)
	defer k.macs[i].Put(m)
	return append(dst, m.compute(k.label, body)...)
}

// verify reports, in constant time, whether tag is the MAC of body under secret i.
func (k *Keyring) verify(i int, body, tag []byte) bool {
	m := k.macs[i].Get().(*mac)
	defer k.macs[i].Put(m)
	return hmac.Equal(m.compute(k.label, body), tag)
}

func (m *mac) compute(label, body []byte) []byte {
	n := copy(m.body[:], body)
	m.h.Reset()
	m.h.Write(label)
	m.h.Write(m.body[:n])
	return m.h.Sum(m.sum[:0])
}
