package token

import (
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// MaxKey is the longest key (the resolved `key` placeholder) a room takes. A longer
// one is refused, never cut: two keys that agree on their first MaxKey bytes would
// otherwise be one visitor. Account ids, user names, e-mail addresses and the
// subject of a signed token all fit with room to spare.
const MaxKey = 512

// keyDomain starts what a keyed visitor id is the MAC of, apart from every other MAC
// the room's secret makes (cookies, passes, challenges).
const keyDomain = "waiting-room key\x00"

// KeyedID is the visitor id of key in the room: the first 16 bytes of
// HMAC-SHA256(secret, "waiting-room key" 0x00 room 0x00 key) under the room's current
// (first) secret. Every instance that shares the room's secret derives the same id
// from the same key, so they agree on the visitor without the key being stored
// anywhere, and nobody without the secret can tell which key an id belongs to or make
// an id of their choosing. The key is any bytes (NUL, line breaks, invalid UTF-8 are
// just bytes); the caller refuses one longer than MaxKey.
//
// It allocates nothing: the key is fed to the MAC through the pooled state's own
// buffer, as the cookie's body is.
func (k *Keyring) KeyedID(key string) queue.VisitorID {
	m := k.macs[0].Get().(*mac)
	defer k.macs[0].Put(m)
	m.h.Reset()
	m.write(keyDomain)
	m.write(k.room)
	m.write("\x00")
	m.write(key)
	var id queue.VisitorID
	copy(id[:], m.h.Sum(m.sum[:0]))
	return id
}

// write feeds s to the MAC through m.body, a chunk at a time: what is written to a
// hash.Hash escapes, and m is on the heap already.
func (m *mac) write(s string) {
	for len(s) > 0 {
		n := copy(m.body[:], s)
		m.h.Write(m.body[:n])
		s = s[n:]
	}
}
