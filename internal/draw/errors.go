package draw

import "errors"

// The kinds of refusal. Verify's and the parsers' errors wrap one of them, with what
// was wrong after it.
var (
	// ErrTooLarge: a receipt or page over its size bound, refused unread.
	ErrTooLarge = errors.New("too large")
	// ErrMalformed: not a receipt or page a room gives out (JSON, members, shapes).
	ErrMalformed = errors.New("malformed")
	// ErrOtherRoom: the receipt is of another room than the page.
	ErrOtherRoom = errors.New("a receipt of another room")
	// ErrOtherDraw: the receipt is of another draw, or of a draw committed to
	// another seed (a draw of the same name after the room's store was emptied).
	ErrOtherDraw = errors.New("a receipt of another draw")
	// ErrSignature: the signature is not the page's key's over the receipt: forged,
	// or changed after signing.
	ErrSignature = errors.New("bad signature")
	// ErrBeforeCommitment: the receipt was issued before the draw was committed,
	// which the room never does; the commitment came too late to bind the entry.
	ErrBeforeCommitment = errors.New("issued before the commitment")
	// ErrCommitment: the page's seed does not hash to its commitment.
	ErrCommitment = errors.New("the seed is not the committed one")
	// ErrEntries: the entries list is not the one the page's count and hash name,
	// or is not a list the room publishes (unsorted, repeated, a bad line).
	ErrEntries = errors.New("bad entries list")
	// ErrNotListed: the receipt's entry is not in the draw's entries.
	ErrNotListed = errors.New("the entry is not in the draw")
	// ErrPlace: the receipt's place is not the one the rule gives, or the receipt
	// has a place before the draw.
	ErrPlace = errors.New("wrong place")
)
