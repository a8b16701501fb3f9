package draw

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// The states of a draw, as the page's "state" says them.
const (
	// StateOpen: entries are open, the commitment is published. A FIFO room's page
	// is always open.
	StateOpen = "open"
	// StateClosed: entries are closed, the count of entrants and the entries
	// list's hash are published; the seed is not.
	StateClosed = "closed"
	// StateDrawn: the order is drawn and the seed is published.
	StateDrawn = "drawn"
)

// The reasons a visitor is let in, as the page's admitted_by_reason and the metric
// name them. Every admission has exactly one.
const (
	ReasonInOrder  = "in_order" // the head of the line, or at once into a room with room to spare
	ReasonPass     = "pass"     // a pass's lane
	ReasonReturned = "returned" // back after their turn passed while away, first in
	ReasonHandoff  = "handoff"  // a place moved to another device, let in there
	ReasonAdmin    = "admin"    // the admin API's admit
	ReasonRandom   = "random"   // mode random's pick: the live waiter first in the committed order
)

// Reasons lists every reason, in the order the page shows them: the bounded set of
// the metric's reason label.
func Reasons() []string {
	return []string{ReasonInOrder, ReasonPass, ReasonReturned, ReasonHandoff, ReasonAdmin, ReasonRandom}
}

// MaxPage is the largest public page JSON read, in bytes; a longer one is refused
// before it is parsed.
const MaxPage = 1 << 20

// MaxEntrants is the most entrants a draw has. It bounds a verifier's work: the
// entries list of MaxEntrants is 553 MB, checked in well under a minute.
const MaxEntrants = 1 << 24

// A Page is the public page of a room's draw, as its JSON gives it: what a verifier
// needs from it. The page has more (admitted_by_reason, and what a later version
// adds), which a verifier does not need and reads past.
type Page struct {
	Room  string
	Draw  string
	State string
	// Committed is when the seed was committed, to the second. Zero in FIFO.
	Committed time.Time
	// Commitment is "sha256:<hex>" of the seed; empty in FIFO.
	Commitment string
	PublicKey  string
	// Entrants and EntriesHash are published once closed.
	Entrants    uint64
	EntriesHash string
	// EntriesURL is where the entries list is served, once closed.
	EntriesURL string
	// Seed is published once drawn: 64 lowercase hex digits.
	Seed string
	// AdmittedByReason is kept as the page gave it; a verifier does not read it.
	AdmittedByReason json.RawMessage
}

// check refuses a page no room publishes: members missing or out of their state.
func (p Page) check() error {
	if err := checkRoom(p.Room); err != nil {
		return err
	}
	if err := CheckDraw(p.Draw); err != nil {
		return err
	}
	if _, err := parsePublicKey(p.PublicKey); err != nil {
		return err
	}
	closed := p.State == StateClosed || p.State == StateDrawn
	switch {
	case p.State != StateOpen && !closed:
		return fmt.Errorf("state must be %s, %s or %s, got %q", StateOpen, StateClosed, StateDrawn, clip(p.State))
	case p.Draw == FIFO:
		if p.State != StateOpen || p.Commitment != "" || !p.Committed.IsZero() || p.EntriesHash != "" || p.Seed != "" {
			return fmt.Errorf("a FIFO room's page is open, with no commitment, entries or seed")
		}
		return nil
	case p.Committed.IsZero():
		return fmt.Errorf("committed is missing")
	case p.Seed != "" && p.State != StateDrawn:
		return fmt.Errorf("the seed is given before the draw (state %s)", p.State)
	case p.Seed == "" && p.State == StateDrawn:
		return fmt.Errorf("the draw is drawn but its seed is missing")
	case closed && p.EntriesHash == "":
		return fmt.Errorf("entries_hash is missing once entries are closed")
	case !closed && p.EntriesHash != "":
		return fmt.Errorf("entries_hash is given while entries are open")
	case p.Entrants > MaxEntrants:
		return fmt.Errorf("entrants is more than %d", MaxEntrants)
	}
	if err := checkSHA256Text("commitment", p.Commitment); err != nil {
		return err
	}
	if closed {
		if err := checkSHA256Text("entries_hash", p.EntriesHash); err != nil {
			return err
		}
	}
	if p.Seed != "" {
		if _, err := ParseSeed(p.Seed); err != nil {
			return err
		}
	}
	return nil
}

// pageJSON is the page's JSON, every member the draw's state has.
type pageJSON struct {
	Room             string          `json:"room"`
	Draw             string          `json:"draw"`
	State            string          `json:"state"`
	Committed        string          `json:"committed,omitempty"`
	Commitment       string          `json:"commitment,omitempty"`
	PublicKey        string          `json:"public_key"`
	Entrants         *uint64         `json:"entrants,omitempty"`
	EntriesHash      string          `json:"entries_hash,omitempty"`
	EntriesURL       string          `json:"entries_url,omitempty"`
	Seed             string          `json:"seed,omitempty"`
	AdmittedByReason json.RawMessage `json:"admitted_by_reason,omitempty"`
}

// MarshalJSON is the page's JSON: entrants, entries_hash and entries_url from closed
// on, seed once drawn. It refuses a page ParsePage would.
func (p Page) MarshalJSON() ([]byte, error) {
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("draw page: %w", err)
	}
	j := pageJSON{Room: p.Room, Draw: p.Draw, State: p.State, Commitment: p.Commitment,
		PublicKey: p.PublicKey, EntriesHash: p.EntriesHash, EntriesURL: p.EntriesURL,
		Seed: p.Seed, AdmittedByReason: p.AdmittedByReason}
	if !p.Committed.IsZero() {
		j.Committed = p.Committed.UTC().Format(issuedLayout)
	}
	if p.EntriesHash != "" {
		j.Entrants = &p.Entrants
	}
	return json.Marshal(j)
}

// ParsePage reads a draw page's JSON. Like ParseReceipt it refuses, with
// ErrMalformed and what was wrong, a member twice (at any depth), a member of the
// wrong type, invalid UTF-8, trailing data, and a page no room publishes (a seed
// before the draw, entries_hash while open, ...); with ErrTooLarge one over MaxPage
// bytes, unread. Unlike a receipt, which is signed and closed, a page may carry
// members this version does not know: they are read past, so a verifier keeps
// working when a later version adds to the page.
func ParsePage(data []byte) (Page, error) {
	if len(data) > MaxPage {
		return Page{}, fmt.Errorf("draw page: %w: a page is at most %d bytes, this one is %d", ErrTooLarge, MaxPage, len(data))
	}
	var p Page
	var committed string
	var hasEntrants bool
	err := strictObject(data, func(name string, dec *json.Decoder) (err error) {
		switch name {
		case "room":
			p.Room, err = readString(dec, name)
		case "draw":
			p.Draw, err = readString(dec, name)
		case "state":
			p.State, err = readString(dec, name)
		case "committed":
			committed, err = readString(dec, name)
		case "commitment":
			p.Commitment, err = readString(dec, name)
		case "public_key":
			p.PublicKey, err = readString(dec, name)
		case "entrants":
			p.Entrants, err = readWhole(dec, name)
			hasEntrants = true
		case "entries_hash":
			p.EntriesHash, err = readString(dec, name)
		case "entries_url":
			p.EntriesURL, err = readString(dec, name)
		case "seed":
			p.Seed, err = readString(dec, name)
		case "admitted_by_reason":
			var raw json.RawMessage
			if err = dec.Decode(&raw); err != nil {
				return malformed(err)
			}
			// Read again for what Decode lets by: a name twice, deep nesting.
			p.AdmittedByReason = raw
			err = skipValue(json.NewDecoder(bytes.NewReader(raw)))
		default:
			err = skipValue(dec)
		}
		return err
	})
	if err != nil {
		return Page{}, fmt.Errorf("draw page: %w", err)
	}
	if committed != "" {
		if p.Committed, err = parseTime(committed); err != nil {
			return Page{}, fmt.Errorf("draw page: %w: committed: %v", ErrMalformed, err)
		}
	}
	if hasEntrants != (p.EntriesHash != "") {
		return Page{}, fmt.Errorf("draw page: %w: entrants and entries_hash come together", ErrMalformed)
	}
	if err := p.check(); err != nil {
		return Page{}, fmt.Errorf("draw page: %w: %v", ErrMalformed, err)
	}
	return p, nil
}
