package waitingroom

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"sync"
	"time"
)

// A token is what the room's cookie carries: who the visitor is, whether it was
// admitted, and until when the token may be believed. It is signed, never encrypted:
// nothing in it is secret, but nothing in it can be changed.
//
// Wire format, base64url without padding:
//
//	version(1) | state(1) | visitor id(16) | since unix seconds(8) | expiry unix seconds(8) | HMAC-SHA256(32)
//
// The MAC covers a domain label, the room name and the body before it, so a cookie of
// one room is worthless in another, and a bit flipped anywhere fails verification.
type token struct {
	state State // Queued or Admitted
	id    VisitorID
	// since is when the visitor joined the queue (Queued) or was admitted (Admitted);
	// it survives reissues, so the wait can be measured at admission on any instance.
	since   time.Time
	expires time.Time
}

const (
	tokenVersion = 1
	tokenBody    = 1 + 1 + 16 + 8 + 8
	tokenLen     = tokenBody + sha256.Size
	tokenText    = (tokenLen*8 + 5) / 6 // base64url, unpadded
)

// keyring signs with the first secret and accepts any of them, so a secret can be
// rotated without sending every admitted visitor back to the queue.
type keyring struct {
	room  string
	macs  []*sync.Pool // one pool of *mac per secret; HMAC setup is not free
	label []byte       // "waiting_room\x00" + room + "\x00"
}

func newKeyring(room string, secrets [][]byte) *keyring {
	k := &keyring{room: room, label: []byte("waiting_room\x00" + room + "\x00")}
	for _, s := range secrets {
		secret := s
		k.macs = append(k.macs, &sync.Pool{New: func() any { return &mac{h: hmac.New(sha256.New, secret)} }})
	}
	return k
}

// seal returns the cookie value for t.
func (k *keyring) seal(t token) string { return string(k.appendSeal(nil, t)) }

// appendSeal appends the cookie value for t to dst, so the handler can write it
// straight into the Set-Cookie line (see Cookie.set) without a string of its own.
func (k *keyring) appendSeal(dst []byte, t token) []byte {
	var raw [tokenLen]byte
	raw[0] = tokenVersion
	raw[1] = byte(t.state)
	copy(raw[2:18], t.id[:])
	binary.BigEndian.PutUint64(raw[18:26], uint64(t.since.Unix()))
	binary.BigEndian.PutUint64(raw[26:34], uint64(t.expires.Unix()))
	k.sum(0, raw[:tokenBody], raw[tokenBody:tokenBody])
	return base64.RawURLEncoding.AppendEncode(dst, raw[:])
}

// open verifies a cookie value and returns its token. Anything wrong (shape, version,
// MAC under every secret, state, expiry) reports false: the request is a new visitor.
// It is the admitted visitor's hot path, so it allocates nothing.
func (k *keyring) open(value string, now time.Time) (token, bool) {
	// An exact length check, not DecodedLen: the decoder skips \r and \n, so a
	// value with a line break inside would otherwise open as the token without it.
	if len(value) != tokenText {
		return token{}, false
	}
	var text [tokenText]byte
	copy(text[:], value)
	var raw [tokenLen]byte
	if n, err := base64.RawURLEncoding.Decode(raw[:], text[:]); err != nil || n != tokenLen {
		return token{}, false
	}
	if raw[0] != tokenVersion {
		return token{}, false
	}
	verified := false
	for i := range k.macs {
		if k.verify(i, raw[:tokenBody], raw[tokenBody:]) {
			verified = true
			break
		}
	}
	if !verified {
		return token{}, false
	}
	t := token{state: State(raw[1])}
	if t.state != Queued && t.state != Admitted {
		return token{}, false
	}
	copy(t.id[:], raw[2:18])
	t.since = time.Unix(int64(binary.BigEndian.Uint64(raw[18:26])), 0)
	t.expires = time.Unix(int64(binary.BigEndian.Uint64(raw[26:34])), 0)
	if !now.Before(t.expires) {
		return token{}, false
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
func (k *keyring) sum(i int, body, dst []byte) []byte {
	m := k.macs[i].Get().(*mac)
	defer k.macs[i].Put(m)
	return append(dst, m.compute(k.label, body)...)
}

// verify reports, in constant time, whether tag is the MAC of body under secret i.
func (k *keyring) verify(i int, body, tag []byte) bool {
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
