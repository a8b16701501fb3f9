package token

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"time"
)

// A Pass lets its holder skip ahead of every waiter without one (docs/passes.md). It
// is verified with the room's secret alone, no store lookup: the store only counts its
// uses (queue.Store.JoinPass).
//
// Wire format, base64url without padding, PassText (42) characters:
//
//	version(1)=1 | pass id(8) | expiry unix seconds(4) | uses(2) | MAC(16)
//
// All integers are big endian. MAC is the first 16 bytes of HMAC-SHA256 under the
// room's secret of "waiting_room_pass" 0x00 room-name 0x00 followed by the 15 bytes
// before it: bound to the room, and apart from the cookie's MACs (their label differs).
// 128 bits of MAC is what a forger must guess; the pass id is random, so two passes
// minted at once by different minters never share a use counter.
type Pass struct {
	// ID names the pass's use counter in the store.
	ID [8]byte
	// Expires is when the pass stops being accepted (and its counter may be forgotten).
	Expires time.Time
	// Uses is how many joins the pass allows, fleet-wide.
	Uses int
}

const (
	passVersion = 1
	passBody    = 1 + 8 + 4 + 2
	passMAC     = 16
	passLen     = passBody + passMAC
	// PassText is the length of a pass as text.
	PassText = (passLen*8 + 5) / 6
	// MaxPassUses is the most uses one pass can carry.
	MaxPassUses = 1<<16 - 1
)

func passLabel(room string) []byte { return []byte("waiting_room_pass\x00" + room + "\x00") }

// IDString is the pass id as the store names its counter: 16 hex digits.
func (p Pass) IDString() string { return hex.EncodeToString(p.ID[:]) }

// NewPass is a pass with a fresh random id.
func NewPass(expires time.Time, uses int) Pass {
	p := Pass{Expires: expires, Uses: uses}
	rand.Read(p.ID[:])
	return p
}

// MintPass signs p with the room's current secret. Expires is kept to the second;
// Uses must be 1..MaxPassUses and Expires before 2106 (the caller checks).
func (k *Keyring) MintPass(p Pass) string {
	var raw [passLen]byte
	raw[0] = passVersion
	copy(raw[1:9], p.ID[:])
	binary.BigEndian.PutUint32(raw[9:13], uint32(p.Expires.Unix()))
	binary.BigEndian.PutUint16(raw[13:15], uint16(p.Uses))
	return k.sealSigned(k.passLabel, raw[:], passBody)
}

// OpenPass verifies a pass of this room and returns it. Anything wrong (length,
// alphabet, version, MAC under every secret, no uses, expired at now) reports false.
// Its work is bounded: a value that is not exactly PassText long is refused before
// decoding.
func (k *Keyring) OpenPass(value string, now time.Time) (Pass, bool) {
	var raw [passLen]byte
	if !k.openSigned(k.passLabel, value, raw[:], passBody) || raw[0] != passVersion {
		return Pass{}, false
	}
	var p Pass
	copy(p.ID[:], raw[1:9])
	p.Expires = time.Unix(int64(binary.BigEndian.Uint32(raw[9:13])), 0)
	p.Uses = int(binary.BigEndian.Uint16(raw[13:15]))
	if p.Uses == 0 || !now.Before(p.Expires) {
		return Pass{}, false
	}
	return p, true
}
