package draw

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// A Receipt is a visitor's signed proof of entry: which room and draw, under which
// commitment, with which entry id and ticket, when, and once drawn the place. Anyone
// can check it with the room's public key (Verify) without asking the room.
//
// As JSON (MarshalJSON), its members are, sorted by name:
//
//	commitment  the draw's commitment, "sha256:<hex>"; absent in a FIFO room
//	draw        the draw's id (FIFO in a room that draws nothing)
//	entry       the entry id, 32 lowercase hex digits
//	issued      when the receipt was signed, "YYYY-MM-DDTHH:MM:SSZ" (UTC)
//	place       the place in the drawn order, from 1; absent until drawn
//	room        the room's name
//	signature   Ed25519 over the other members' canonical JSON, base64url unpadded
//	ticket      the visitor's ticket: arrival order, or after a draw the drawn ticket
//
// The signed bytes (Canonical) are RFC 8785: the object without "signature", members
// sorted by name, no whitespace, numbers in plain decimal, strings with only '"', '\'
// and U+0000 to U+001F escaped (as \" \\ \b \t \n \f \r or \u00xx). In JavaScript
// that is JSON.stringify of the object with its keys sorted.
type Receipt struct {
	Room string
	Draw string
	// Commitment is the draw's commitment, which the receipt binds to: a receipt
	// shown against a page that commits to another seed is refused, and two
	// receipts of one draw that name different commitments are the room's own
	// signed evidence that it said two things. Empty in a FIFO room.
	Commitment string
	Entry      Entry
	Ticket     uint64
	// Issued is kept to the second, in UTC.
	Issued time.Time
	// Place is the place in the drawn order, from 1; 0 until drawn and in FIFO.
	Place uint64
	// Signature is what Signer.Sign sets: base64url, unpadded, 86 characters.
	Signature string
}

const (
	// MaxReceipt is the largest receipt read, in bytes; a longer one is refused
	// before it is parsed. A receipt is about 330 bytes and its room's name.
	MaxReceipt = 8 << 10
	// MaxRoom is the longest room name a receipt holds, in bytes.
	MaxRoom = 512
	// MaxDraw is the longest draw id.
	MaxDraw = 64
	// FIFO is the draw id of a room that draws nothing: the receipt is the visitor's
	// ticket, their place in arrival order, signed.
	FIFO = "fifo"

	issuedLayout = "2006-01-02T15:04:05Z"
	signatureLen = 86 // base64url of 64 bytes, unpadded
)

// strictBase64 refuses the bits past the data in the last character: a lax decoder
// ignores them, so a signature with its last character changed would still open.
var strictBase64 = base64.RawURLEncoding.Strict()

// CheckDraw refuses what cannot be a draw id: 1 to MaxDraw characters of A-Z a-z 0-9
// and - . _ : (an id goes into file names, keys and a page's address as it is).
func CheckDraw(id string) error {
	if id == "" || len(id) > MaxDraw {
		return fmt.Errorf("draw id must be 1 to %d characters, got %d", MaxDraw, len(id))
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == ':') {
			return fmt.Errorf("draw id must be made of A-Z a-z 0-9 - . _ :, got %q", clip(id))
		}
	}
	return nil
}

// checkRoom refuses a room name a receipt cannot hold.
func checkRoom(room string) error {
	switch {
	case room == "":
		return fmt.Errorf("room is empty")
	case len(room) > MaxRoom:
		return fmt.Errorf("room name is longer than %d bytes", MaxRoom)
	case !utf8.ValidString(room) || hasReplacement(room):
		return fmt.Errorf("room name is not valid UTF-8")
	}
	return nil
}

// check refuses a receipt that no room signs.
func (r Receipt) check() error {
	if err := checkRoom(r.Room); err != nil {
		return err
	}
	if err := CheckDraw(r.Draw); err != nil {
		return err
	}
	if r.Draw == FIFO {
		if r.Commitment != "" || r.Place != 0 {
			return fmt.Errorf("a FIFO receipt has no commitment and no place")
		}
	} else if err := checkSHA256Text("commitment", r.Commitment); err != nil {
		return err
	}
	if r.Ticket > MaxSafe || r.Place > MaxSafe {
		return fmt.Errorf("ticket and place must be at most %d", uint64(MaxSafe))
	}
	if y := r.Issued.UTC().Year(); y < 1970 || y > 9999 {
		return fmt.Errorf("issued must be a time from 1970 to 9999")
	}
	return nil
}

// members are the receipt's members without its signature, sorted by name.
func (r Receipt) members() []member {
	m := make([]member, 0, 8)
	if r.Commitment != "" {
		m = append(m, member{name: "commitment", str: r.Commitment})
	}
	m = append(m,
		member{name: "draw", str: r.Draw},
		member{name: "entry", str: r.Entry.String()},
		member{name: "issued", str: r.Issued.UTC().Format(issuedLayout)})
	if r.Place != 0 {
		m = append(m, member{name: "place", num: r.Place, isNum: true})
	}
	return append(m,
		member{name: "room", str: r.Room},
		member{name: "ticket", num: r.Ticket, isNum: true})
}

// Canonical is the bytes the signature is over: the receipt without "signature" as
// RFC 8785 writes it. It refuses a receipt no room signs (an empty room, a name too
// long, a ticket past MaxSafe, ...).
func (r Receipt) Canonical() ([]byte, error) {
	if err := r.check(); err != nil {
		return nil, fmt.Errorf("receipt: %w", err)
	}
	return appendObject(nil, r.members()), nil
}

// MarshalJSON is the receipt as the room gives it out: the canonical form of every
// member, the signature included.
func (r Receipt) MarshalJSON() ([]byte, error) {
	if err := r.check(); err != nil {
		return nil, fmt.Errorf("receipt: %w", err)
	}
	m := r.members()
	// "signature" sorts between "room" and "ticket", the last two.
	m = append(m[:len(m)-1], member{name: "signature", str: r.Signature}, m[len(m)-1])
	return appendObject(nil, m), nil
}

// ParseReceipt reads a receipt as MarshalJSON writes it, in any layout (whitespace and
// member order are free; the signature is over the canonical form, not the bytes
// read). It refuses, each with ErrMalformed and what was wrong: a member it does not
// know, a member twice, one missing, a value of the wrong type or shape, and a
// receipt no room signs; and with ErrTooLarge one over MaxReceipt bytes, unread. It
// does not check the signature: Verify does, with the page's key.
func ParseReceipt(data []byte) (Receipt, error) {
	if len(data) > MaxReceipt {
		return Receipt{}, fmt.Errorf("%w: a receipt is at most %d bytes, this one is %d", ErrTooLarge, MaxReceipt, len(data))
	}
	var r Receipt
	var entry, issued string
	var hasTicket bool
	err := strictObject(data, func(name string, dec *json.Decoder) (err error) {
		switch name {
		case "room":
			r.Room, err = readString(dec, name)
		case "draw":
			r.Draw, err = readString(dec, name)
		case "commitment":
			r.Commitment, err = readString(dec, name)
		case "entry":
			entry, err = readString(dec, name)
		case "issued":
			issued, err = readString(dec, name)
		case "signature":
			r.Signature, err = readString(dec, name)
		case "ticket":
			r.Ticket, err = readWhole(dec, name)
			hasTicket = true
		case "place":
			if r.Place, err = readWhole(dec, name); err == nil && r.Place == 0 {
				err = fmt.Errorf("%w: place starts at 1", ErrMalformed)
			}
		default:
			err = fmt.Errorf("%w: a receipt has no member %q", ErrMalformed, clip(name))
		}
		return err
	})
	if err != nil {
		return Receipt{}, fmt.Errorf("receipt: %w", err)
	}
	for _, m := range []struct {
		name    string
		missing bool
	}{
		{"room", r.Room == ""}, {"draw", r.Draw == ""}, {"entry", entry == ""},
		{"ticket", !hasTicket}, {"issued", issued == ""}, {"signature", r.Signature == ""},
	} {
		if m.missing {
			return Receipt{}, fmt.Errorf("receipt: %w: %s is missing", ErrMalformed, m.name)
		}
	}
	if r.Entry, err = ParseEntry(entry); err != nil {
		return Receipt{}, fmt.Errorf("receipt: %w: %v", ErrMalformed, err)
	}
	if r.Issued, err = parseTime(issued); err != nil {
		return Receipt{}, fmt.Errorf("receipt: %w: issued: %v", ErrMalformed, err)
	}
	if len(r.Signature) != signatureLen {
		return Receipt{}, fmt.Errorf("receipt: %w: signature must be %d characters of base64url, got %d", ErrMalformed, signatureLen, len(r.Signature))
	}
	if err := r.check(); err != nil {
		return Receipt{}, fmt.Errorf("receipt: %w: %v", ErrMalformed, err)
	}
	return r, nil
}

// parseTime reads a time as issued and committed are written, and only that way:
// one spelling per instant, so the signed bytes are the bytes read.
func parseTime(text string) (time.Time, error) {
	t, err := time.Parse(issuedLayout, text)
	if err != nil || t.Format(issuedLayout) != text {
		return time.Time{}, fmt.Errorf("want YYYY-MM-DDTHH:MM:SSZ, got %q", clip(text))
	}
	return t, nil
}
