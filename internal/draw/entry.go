package draw

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
)

// EntryText is the length of an entry id as text: 32 lowercase hex digits.
const EntryText = 32

// An Entry is an entry id: 16 random bytes the room mints for an entrant when the
// visitor joins a line that will be drawn. It is not the visitor id and nothing can be
// done with it but find one's own place, so every entry id of a draw is published.
type Entry [EntryText / 2]byte

// NewEntry is a fresh entry id from the system's random source.
func NewEntry() Entry {
	var e Entry
	rand.Read(e[:]) // never fails (crypto/rand, Go 1.24+)
	return e
}

// String is the entry id as receipts and the entries list spell it, the text the
// order's HMAC is computed over.
func (e Entry) String() string { return hex.EncodeToString(e[:]) }

// appendText appends String to dst.
func (e Entry) appendText(dst []byte) []byte { return hex.AppendEncode(dst, e[:]) }

// ParseEntry reads an entry id as String writes it: exactly 32 lowercase hex digits.
func ParseEntry(text string) (Entry, error) {
	var e Entry
	if err := parseHex(e[:], text); err != nil {
		return Entry{}, fmt.Errorf("entry id: %w", err)
	}
	return e, nil
}

// List is the entries list as published: every entry id, sorted ascending, each
// followed by "\n" (the last one too, so `sha256sum` of the downloaded file is
// EntriesHash of it). A list of no entries is empty. It refuses an entry listed twice:
// two entrants never share an id, so a repeat is a bug upstream, not a tie to break.
func List(entries []Entry) ([]byte, error) {
	sorted := slices.Clone(entries)
	// The byte order of the ids is the order of their hex text.
	slices.SortFunc(sorted, func(a, b Entry) int { return bytes.Compare(a[:], b[:]) })
	out := make([]byte, 0, len(sorted)*(EntryText+1))
	for i, e := range sorted {
		if i > 0 && e == sorted[i-1] {
			return nil, fmt.Errorf("entries list: %s is listed twice", e)
		}
		out = append(e.appendText(out), '\n')
	}
	return out, nil
}

// EntriesHash is what the room publishes when entries close: "sha256:" and the hex of
// SHA-256 of the entries list, exactly its bytes (List).
func EntriesHash(list []byte) string { return sha256Text(list) }
