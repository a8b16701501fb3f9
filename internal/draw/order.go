package draw

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"hash"
	"slices"
)

// A Rank is where an entry stands in a draw: HMAC-SHA256 with the seed's bytes as the
// key and the entry id's text as the message. The lower rank comes first.
type Rank [sha256.Size]byte

// Ranker computes ranks under one seed, reusing one HMAC state: a draw of a million
// entries computes a million of them. A Ranker is not safe for concurrent use.
type Ranker struct {
	mac  hash.Hash
	text [EntryText]byte
	sum  []byte // what is passed to a hash.Hash escapes: these buffers are on the heap once
}

// NewRanker is a Ranker for the draw of seed.
func NewRanker(seed Seed) *Ranker {
	return &Ranker{mac: hmac.New(sha256.New, seed[:]), sum: make([]byte, 0, sha256.Size)}
}

// Rank is entry's rank under the Ranker's seed.
func (r *Ranker) Rank(e Entry) Rank {
	r.mac.Reset()
	r.mac.Write(e.appendText(r.text[:0]))
	r.sum = r.mac.Sum(r.sum[:0])
	return Rank(r.sum)
}

// Compare orders two entries of one draw by the rule: by rank, then by entry id. It
// is negative when a comes first, 0 only when a and b are the same entry.
func Compare(a Entry, ra Rank, b Entry, rb Rank) int {
	if c := bytes.Compare(ra[:], rb[:]); c != 0 {
		return c
	}
	return bytes.Compare(a[:], b[:])
}

// Order is the drawn order of entries under seed: place 1 first. entries is left as
// it was.
func Order(seed Seed, entries []Entry) []Entry {
	r := NewRanker(seed)
	type ranked struct {
		e Entry
		r Rank
	}
	rs := make([]ranked, len(entries))
	for i, e := range entries {
		rs[i] = ranked{e, r.Rank(e)}
	}
	slices.SortFunc(rs, func(a, b ranked) int { return Compare(a.e, a.r, b.e, b.r) })
	out := make([]Entry, len(rs))
	for i := range rs {
		out[i] = rs[i].e
	}
	return out
}
