package token

import (
	"crypto/subtle"
	"hash/maphash"
	"sync/atomic"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// The verified cache remembers admitted cookie values whose MAC held, so that an
// admitted visitor's next requests skip the base64 decoding and the HMAC: an
// admitted cookie is presented on every request of a session and re-sealed only when
// the session is confirmed with the store again, so nearly every request repeats a
// value verified before. Verifying was the largest part of the room's cost on an
// admitted request, a quarter of it in a CPU profile of Caddy under the load
// harness's admitted section; docs/performance.md gives the end-to-end figure.
//
// It is a fixed table of slots, each holding one value, found by a hash with a seed
// of this process's own (so nobody can aim values at one slot), read without a lock
// (one atomic load) so that requests on every core read it without writing to a
// shared cache line. Only a value that opened in full gets in, so nothing forged is
// ever found in it; a value is compared in constant time; and the token found is
// still checked against the clock, as Open does. A value that loses its slot to
// another is verified again the next time, no more. The cache belongs to the
// keyring: a keyring of other secrets starts empty.

// verifiedSlots is how many values the cache holds: 8192 slots of one pointer each
// (64 KiB a room), so a sale's admitted visitors, up to a few thousand at once,
// mostly find their own.
const verifiedSlots = 1 << 13

type verifiedCache struct {
	seed  maphash.Seed
	slots [verifiedSlots]atomic.Pointer[verifiedEntry]
}

type verifiedEntry struct {
	text [Text]byte
	tok  Token
}

func newVerifiedCache() *verifiedCache { return &verifiedCache{seed: maphash.MakeSeed()} }

func (c *verifiedCache) slot(value string) *atomic.Pointer[verifiedEntry] {
	return &c.slots[maphash.String(c.seed, value)%verifiedSlots]
}

// find returns the token of text, a value verified before, if it is in the cache
// and not expired at now.
func (c *verifiedCache) find(value string, text *[Text]byte, now time.Time) (Token, bool) {
	e := c.slot(value).Load()
	if e == nil || subtle.ConstantTimeCompare(e.text[:], text[:]) != 1 || !now.Before(e.tok.Expires) {
		return Token{}, false
	}
	return e.tok, true
}

// remember keeps tok, just opened from text, when it is an admitted visitor's.
func (c *verifiedCache) remember(value string, text *[Text]byte, tok Token) {
	if tok.State != queue.Admitted {
		return // a waiter's cookie is re-sealed on every request: it would never be found
	}
	c.slot(value).Store(&verifiedEntry{text: *text, tok: tok})
}
