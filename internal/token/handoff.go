package token

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// A Handoff moves a visitor's place to another device (docs/people-and-devices.md):
// the first device asks for one and shows it as a link and a QR code, the second
// opens the link. It is verified with the room's secret alone; that it is used once,
// fleet-wide, is the store's once-only check of its nonce (queue.Store.Once), and the
// move itself is the store's (queue.Store.Move).
//
// Wire format, base64url without padding, HandoffText (67) characters:
//
//	version(1)=1 | visitor id(16) | nonce(8) | expiry unix seconds(4) |
//	since unix seconds(4) | flags(1) | MAC(16)
//
// All integers are big endian. flags bit 0 says the place is a pass holder's, bit 1
// that it is a keyed visitor's (the place is not renamed: see Keyed); the other bits
// are zero. since is when the visitor joined the queue or was admitted, as its
// cookie says, so the new device's cookie says the same. MAC is the first 16 bytes
// of HMAC-SHA256 under the room's secret of "waiting_room_handoff" 0x00 room-name
// 0x00 followed by the body: bound to the room and apart from the cookie's and the
// pass's MACs. The visitor id is not secret from the one who holds the code: whoever
// holds it can take the place anyway, which is what it is for.
type Handoff struct {
	// ID is the visitor whose place moves.
	ID queue.VisitorID
	// Nonce names the code's once-only key in the store.
	Nonce [8]byte
	// Expires is when the code stops being accepted, to the second.
	Expires time.Time
	// Since is the visitor's cookie's Since, to the second.
	Since time.Time
	// Pass says the place is a pass holder's.
	Pass bool
	// Keyed says the visitor is a key's (room.Visit.Key): its id is the key's, so the
	// new device is given a cookie for the same id instead of the place being renamed.
	Keyed bool
}

// HandoffLife is how long a hand-off code is accepted.
const HandoffLife = 10 * time.Minute

const (
	handoffVersion = 1
	handoffBody    = 1 + 16 + 8 + 4 + 4 + 1
	handoffMAC     = 16
	handoffLen     = handoffBody + handoffMAC
	// HandoffText is the length of a hand-off code as text: anything else is refused
	// before it is decoded.
	HandoffText = (handoffLen*8 + 5) / 6

	handoffPass  = 1
	handoffKeyed = 2
)

func handoffLabel(room string) []byte { return []byte("waiting_room_handoff\x00" + room + "\x00") }

// NonceString is the nonce as the store names its once-only key: 16 hex digits.
func (h Handoff) NonceString() string { return hex.EncodeToString(h.Nonce[:]) }

// NewHandoff is a code for visitor id's place with a fresh random nonce, valid for
// HandoffLife from now.
func NewHandoff(id queue.VisitorID, since, now time.Time, pass, keyed bool) Handoff {
	h := Handoff{ID: id, Expires: now.Add(HandoffLife), Since: since, Pass: pass, Keyed: keyed}
	rand.Read(h.Nonce[:])
	return h
}

// MintHandoff signs h with the room's current secret.
func (k *Keyring) MintHandoff(h Handoff) string {
	var raw [handoffLen]byte
	raw[0] = handoffVersion
	copy(raw[1:17], h.ID[:])
	copy(raw[17:25], h.Nonce[:])
	binary.BigEndian.PutUint32(raw[25:29], uint32(h.Expires.Unix()))
	binary.BigEndian.PutUint32(raw[29:33], uint32(max(h.Since.Unix(), 0)))
	if h.Pass {
		raw[33] |= handoffPass
	}
	if h.Keyed {
		raw[33] |= handoffKeyed
	}
	return k.sealSigned(handoffLabel(k.room), raw[:], handoffBody)
}

// OpenHandoff verifies a hand-off code of this room and returns it. Anything wrong
// (length, alphabet, version, flags, MAC under every secret, expired at now) reports
// false. Its work is bounded: a value that is not exactly HandoffText long is refused
// before decoding. It does not say whether the code was used: the store does.
func (k *Keyring) OpenHandoff(value string, now time.Time) (Handoff, bool) {
	var raw [handoffLen]byte
	if !k.openSigned(handoffLabel(k.room), value, raw[:], handoffBody) {
		return Handoff{}, false
	}
	if raw[0] != handoffVersion || raw[33]&^(handoffPass|handoffKeyed) != 0 {
		return Handoff{}, false
	}
	var h Handoff
	copy(h.ID[:], raw[1:17])
	copy(h.Nonce[:], raw[17:25])
	h.Expires = time.Unix(int64(binary.BigEndian.Uint32(raw[25:29])), 0)
	h.Since = time.Unix(int64(binary.BigEndian.Uint32(raw[29:33])), 0)
	h.Pass = raw[33]&handoffPass != 0
	h.Keyed = raw[33]&handoffKeyed != 0
	if !now.Before(h.Expires) {
		return Handoff{}, false
	}
	return h, true
}
