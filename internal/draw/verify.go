package draw

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
)

// Result is what a receipt is, checked against the page.
type Result struct {
	Receipt Receipt
	Page    Page
	// Place is the entry's place in the drawn order, recomputed from the seed and
	// the entries list; 0 before the draw and in a FIFO room (whose place is the
	// receipt's Ticket, in arrival order).
	Place uint64
}

// Verify checks a receipt against the room's public page and, once entries have
// closed, the entries list the page's entries_url serves. It checks, in this order,
// and each failure wraps the Err above that names it:
//
//   - both parse (ParseReceipt, ParsePage), within their size bounds;
//   - the receipt is of the page's room, draw and commitment;
//   - the signature is the page's public key's over the receipt;
//   - the receipt was issued at or after the commitment;
//   - once drawn, the seed's SHA-256 is the commitment;
//   - once closed, the list has exactly entrants lines, sorted, each entry once,
//     its SHA-256 is entries_hash, and the receipt's entry is in it;
//   - once drawn, the place the rule gives the entry is the receipt's, when the
//     receipt has one (a receipt issued before the draw has none: Result.Place
//     is then the answer).
//
// entries is read once, a line at a time, and may be nil while the draw is open or
// in FIFO. It is never read past the page's count of entrants and one byte more.
func Verify(receipt, page []byte, entries io.Reader) (Result, error) {
	r, err := ParseReceipt(receipt)
	if err != nil {
		return Result{}, err
	}
	p, err := ParsePage(page)
	if err != nil {
		return Result{}, err
	}
	res := Result{Receipt: r, Page: p}
	switch {
	case r.Room != p.Room:
		return res, fmt.Errorf("%w: the receipt is of room %q, the page of room %q", ErrOtherRoom, clip(r.Room), clip(p.Room))
	case r.Draw != p.Draw:
		return res, fmt.Errorf("%w: the receipt is of draw %q, the page of draw %q", ErrOtherDraw, r.Draw, p.Draw)
	case r.Commitment != p.Commitment:
		return res, fmt.Errorf("%w: the receipt is of the draw committed to %s, the page's is committed to %s", ErrOtherDraw, r.Commitment, p.Commitment)
	}
	key, err := parsePublicKey(p.PublicKey)
	if err != nil { // ParsePage checked it
		return res, fmt.Errorf("draw page: %w: %v", ErrMalformed, err)
	}
	if err := checkSignature(key, r); err != nil {
		return res, fmt.Errorf("receipt: %w", err)
	}
	if p.Draw == FIFO {
		return res, nil
	}
	if r.Issued.Before(p.Committed) {
		return res, fmt.Errorf("%w: issued %s, committed %s", ErrBeforeCommitment,
			r.Issued.Format(issuedLayout), p.Committed.Format(issuedLayout))
	}
	var seed Seed
	if p.State == StateDrawn {
		if seed, err = ParseSeed(p.Seed); err != nil { // ParsePage checked it
			return res, fmt.Errorf("draw page: %w: %v", ErrMalformed, err)
		}
		if !seed.Matches(p.Commitment) {
			return res, fmt.Errorf("%w: SHA-256 of seed %s is %s, the commitment is %s", ErrCommitment, p.Seed, seed.Commitment(), p.Commitment)
		}
	}
	if p.State == StateOpen {
		if r.Place != 0 {
			return res, fmt.Errorf("%w: the receipt has place %d, but the draw is still open", ErrPlace, r.Place)
		}
		return res, nil
	}
	if entries == nil {
		return res, fmt.Errorf("%w: the draw is %s, and its entries list (entries_url) is needed", ErrEntries, p.State)
	}
	ahead, listed, err := readEntries(entries, p, r.Entry, seed)
	if err != nil {
		return res, err
	}
	if !listed {
		return res, fmt.Errorf("%w: entry %s is not among the %d entrants", ErrNotListed, r.Entry, p.Entrants)
	}
	if p.State == StateClosed {
		if r.Place != 0 {
			return res, fmt.Errorf("%w: the receipt has place %d, but the draw is not drawn yet", ErrPlace, r.Place)
		}
		return res, nil
	}
	res.Place = ahead + 1
	if r.Place != 0 && r.Place != res.Place {
		return res, fmt.Errorf("%w: the receipt says place %d, the rule gives place %d", ErrPlace, r.Place, res.Place)
	}
	return res, nil
}

// readEntries reads the entries list of p and reports how many entries come before
// mine in the drawn order (when p is drawn) and whether mine is listed. It refuses a
// list that is not p's: another count or hash, a line that is not an entry id and
// "\n", or ids out of order or repeated.
func readEntries(list io.Reader, p Page, mine Entry, seed Seed) (ahead uint64, listed bool, err error) {
	const line = EntryText + 1
	in := bufio.NewReaderSize(list, 64<<10)
	sum := sha256.New()
	var ranker *Ranker
	var myRank Rank
	if p.State == StateDrawn {
		ranker = NewRanker(seed)
		myRank = ranker.Rank(mine)
	}
	var prev, cur [line]byte
	var e Entry
	for n := uint64(0); ; n++ {
		m, rerr := io.ReadFull(in, cur[:])
		if rerr == io.EOF {
			if n != p.Entrants {
				return 0, false, fmt.Errorf("%w: %d entries, the page says %d", ErrEntries, n, p.Entrants)
			}
			break
		}
		if rerr != nil && rerr != io.ErrUnexpectedEOF {
			return 0, false, fmt.Errorf("%w: reading it: %v", ErrEntries, rerr)
		}
		if n == p.Entrants {
			return 0, false, fmt.Errorf("%w: more than the page's %d entries", ErrEntries, p.Entrants)
		}
		if m < line || cur[EntryText] != '\n' {
			return 0, false, fmt.Errorf("%w: line %d is not an entry id and a line break", ErrEntries, n+1)
		}
		if err := parseHex(e[:], string(cur[:EntryText])); err != nil {
			return 0, false, fmt.Errorf("%w: line %d: %v", ErrEntries, n+1, err)
		}
		if n > 0 && bytes.Compare(cur[:], prev[:]) <= 0 {
			return 0, false, fmt.Errorf("%w: line %d is not after line %d: the list is sorted and each entry is in it once", ErrEntries, n+1, n)
		}
		prev = cur
		sum.Write(cur[:])
		if e == mine {
			listed = true
		} else if ranker != nil && Compare(e, ranker.Rank(e), mine, myRank) < 0 {
			ahead++
		}
	}
	if got := "sha256:" + hex.EncodeToString(sum.Sum(nil)); got != p.EntriesHash {
		return 0, false, fmt.Errorf("%w: its SHA-256 is %s, the page's entries_hash is %s", ErrEntries, got, p.EntriesHash)
	}
	return ahead, listed, nil
}
