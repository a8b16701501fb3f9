package draw

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// From a receipt and the page, every entrant finds the place the room gave them, and
// an entrant whose receipt predates the draw finds it too.
func TestVerifyFindsEveryPlace(t *testing.T) {
	d := newDraw(t, "shop", "event-1", testSecret, 300, rand.New(rand.NewPCG(5, 6)))
	page := d.page(t, StateDrawn)
	for i := range d.entries {
		for _, r := range []Receipt{d.drawn[i], d.joined[i]} {
			res, err := Verify(mustJSON(t, r), page, bytes.NewReader(d.list))
			if err != nil {
				t.Fatalf("entrant %d: %v", i, err)
			}
			if res.Place != d.drawn[i].Place || d.order[res.Place-1] != d.entries[i] {
				t.Fatalf("entrant %d: place %d, the room gave %d", i, res.Place, d.drawn[i].Place)
			}
		}
	}
}

// Before the draw a receipt checks as far as it can: signed, of this draw, on the
// list once closed; a place is not found before the seed is out.
func TestVerifyBeforeTheDraw(t *testing.T) {
	d := newDraw(t, "shop", "event-1", testSecret, 20, rand.New(rand.NewPCG(7, 8)))
	r := mustJSON(t, d.joined[3])
	if res, err := Verify(r, d.page(t, StateOpen), nil); err != nil || res.Place != 0 {
		t.Fatalf("open: %+v, %v", res, err)
	}
	if res, err := Verify(r, d.page(t, StateClosed), bytes.NewReader(d.list)); err != nil || res.Place != 0 {
		t.Fatalf("closed: %+v, %v", res, err)
	}
	if _, err := Verify(r, d.page(t, StateClosed), nil); !errors.Is(err, ErrEntries) {
		t.Fatalf("closed without the list: %v", err)
	}
	drawn := mustJSON(t, d.drawn[3])
	for _, state := range []string{StateOpen, StateClosed} {
		if _, err := Verify(drawn, d.page(t, state), bytes.NewReader(d.list)); !errors.Is(err, ErrPlace) {
			t.Errorf("a receipt with a place against the %s page: %v", state, err)
		}
	}
}

// A FIFO room's receipt is its ticket, signed, checked against the FIFO page; it is
// no receipt of a draw, nor a draw's receipt one of FIFO.
func TestVerifyFIFO(t *testing.T) {
	s, _ := NewSigner("shop", testSecret)
	r, err := s.Sign(Receipt{Room: "shop", Draw: FIFO, Entry: NewEntry(), Ticket: 41, Issued: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	page, err := Page{Room: "shop", Draw: FIFO, State: StateOpen, PublicKey: s.PublicKey()}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	res, err := Verify(mustJSON(t, r), page, nil)
	if err != nil || res.Receipt.Ticket != 41 || res.Place != 0 {
		t.Fatalf("%+v, %v", res, err)
	}
	d := newDraw(t, "shop", "event-1", testSecret, 3, rand.New(rand.NewPCG(1, 1)))
	if _, err := Verify(mustJSON(t, r), d.page(t, StateDrawn), bytes.NewReader(d.list)); !errors.Is(err, ErrOtherDraw) {
		t.Errorf("a FIFO receipt against a draw's page: %v", err)
	}
	if _, err := Verify(mustJSON(t, d.drawn[0]), page, nil); !errors.Is(err, ErrOtherDraw) {
		t.Errorf("a draw's receipt against the FIFO page: %v", err)
	}
	for name, bad := range map[string]map[string]any{
		"a FIFO page with a commitment": {"commitment": d.seed.Commitment(), "committed": "2031-06-01T09:00:00Z"},
		"a FIFO page drawn":             {"state": StateDrawn, "seed": d.seed.String()},
	} {
		if _, err := Verify(mustJSON(t, r), edit(t, page, bad), nil); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Every change of one character of a receipt is refused, wherever it is: in a value
// (the signature fails), a name (unknown), the syntax (malformed), or the signature's
// last character, whose spare bits a lax base64 decoder would ignore.
func TestVerifyRefusesEveryOneCharacterChange(t *testing.T) {
	d := newDraw(t, "shop", "event-1", testSecret, 5, rand.New(rand.NewPCG(9, 10)))
	page := d.page(t, StateDrawn)
	good := mustJSON(t, d.drawn[2])
	for i := range good {
		for _, c := range []byte{'0', '1', 'a', 'A', '_', '-', '"', ' ', good[i] ^ 1, good[i] + 1} {
			if c == good[i] {
				continue
			}
			bad := bytes.Clone(good)
			bad[i] = c
			if _, err := Verify(bad, page, bytes.NewReader(d.list)); err == nil {
				t.Fatalf("accepted with byte %d changed from %q to %q: %s", i, good[i], c, bad)
			}
		}
	}
}

// A receipt cut anywhere is refused.
func TestVerifyRefusesACutReceipt(t *testing.T) {
	d := newDraw(t, "shop", "event-1", testSecret, 5, rand.New(rand.NewPCG(9, 10)))
	good := mustJSON(t, d.drawn[1])
	for n := range len(good) {
		if _, err := Verify(good[:n], d.page(t, StateDrawn), bytes.NewReader(d.list)); !errors.Is(err, ErrMalformed) {
			t.Fatalf("cut to %d bytes: %v", n, err)
		}
	}
}

// A receipt shown against a page it is not of: another room (even one that shares
// the secret), another draw of the room, the same draw's name committed again after
// the room's store was emptied, or a receipt signed under another secret.
func TestVerifyRefusesReplayedAndForgedReceipts(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	d := newDraw(t, "shop", "event-1", testSecret, 10, r)
	page := d.page(t, StateDrawn)
	list := func() *bytes.Reader { return bytes.NewReader(d.list) }
	otherRoom := newDraw(t, "shop2", "event-1", testSecret, 10, r)
	nextDraw := newDraw(t, "shop", "event-2", testSecret, 10, r)
	again := newDraw(t, "shop", "event-1", testSecret, 10, r) // the same name, a new seed
	forger := newDraw(t, "shop", "event-1", []byte("not the room's secret, 32 bytes!"), 10, r)
	forger.seed = d.seed
	forged, err := forger.signer.Sign(Receipt{Room: "shop", Draw: "event-1", Commitment: d.seed.Commitment(),
		Entry: d.entries[4], Ticket: 1000, Issued: testCommitted.Add(time.Hour), Place: 1})
	if err != nil {
		t.Fatal(err)
	}
	moved := d.drawn[4]
	moved.Place = 1 // a place of one's choosing, signature kept
	for _, c := range []struct {
		name    string
		receipt Receipt
		want    error
	}{
		{"another room's", otherRoom.drawn[0], ErrOtherRoom},
		{"another draw's", nextDraw.drawn[0], ErrOtherDraw},
		{"the draw's name committed again", again.drawn[0], ErrOtherDraw},
		{"signed under another secret", forged, ErrSignature},
		{"its place changed", moved, ErrSignature},
	} {
		if _, err := Verify(mustJSON(t, c.receipt), page, list()); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	// Another room's receipt with its room changed to this one's: the key is the room's.
	renamed := otherRoom.drawn[0]
	renamed.Room = "shop"
	renamed.Commitment = d.seed.Commitment()
	if _, err := Verify(mustJSON(t, renamed), page, list()); !errors.Is(err, ErrSignature) {
		t.Errorf("another room's receipt renamed: %v", err)
	}
}

// A page that is not the committed draw's, or a list that is not the page's, is
// refused: the seed does not hash to the commitment, the seed comes before the
// draw, the list lost, gained, reordered or changed an entry, or the room signed a
// place the rule does not give.
func TestVerifyRefusesPagesAndListsThatAreNotTheDraws(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	d := newDraw(t, "shop", "event-1", testSecret, 10, r)
	receipt := mustJSON(t, d.drawn[6])
	page := d.page(t, StateDrawn)
	otherSeed := NewSeed()
	lines := strings.SplitAfter(string(d.list), "\n")[:10]
	without := strings.Join(append(append([]string(nil), lines[:6]...), lines[7:]...), "")
	mine := d.entries[6].String() + "\n"
	withoutMine := strings.Replace(string(d.list), mine, "", 1)
	withExtra := string(d.list) + "ffffffffffffffffffffffffffffffff\n"
	swapped := strings.Join(append([]string{lines[1], lines[0]}, lines[2:]...), "")
	wrongPlace := d.drawn[6]
	wrongPlace.Place = d.drawn[6].Place%10 + 1
	wrongPlace, _ = d.signer.Sign(wrongPlace)
	early := d.joined[6]
	early.Issued = testCommitted.Add(-time.Second)
	early, _ = d.signer.Sign(early)
	for _, c := range []struct {
		name    string
		receipt []byte
		page    []byte
		list    string
		want    error
	}{
		{"a seed that is not the committed one", receipt, edit(t, page, map[string]any{"seed": otherSeed.String()}), string(d.list), ErrCommitment},
		{"the seed before the draw", receipt, edit(t, d.page(t, StateClosed), map[string]any{"seed": d.seed.String()}), string(d.list), ErrMalformed},
		{"the seed while open", mustJSON(t, d.joined[6]), edit(t, d.page(t, StateOpen), map[string]any{"seed": d.seed.String()}), "", ErrMalformed},
		{"drawn without a seed", receipt, edit(t, page, map[string]any{"seed": nil}), string(d.list), ErrMalformed},
		{"an entry missing", receipt, page, without, ErrEntries},
		{"an entry too many", receipt, page, withExtra, ErrEntries},
		{"two entries swapped", receipt, page, swapped, ErrEntries},
		{"an entry twice", receipt, page, lines[0] + strings.Join(lines[:9], ""), ErrEntries},
		{"no line break at the end", receipt, page, strings.TrimSuffix(string(d.list), "\n"), ErrEntries},
		{"a line break more", receipt, page, string(d.list) + "\n", ErrEntries},
		{"an entry in upper case", receipt, page, strings.ToUpper(string(d.list)), ErrEntries},
		{"CRLF lines", receipt, page, strings.ReplaceAll(string(d.list), "\n", "\r\n"), ErrEntries},
		{"one entry changed", receipt, page, strings.Replace(string(d.list), lines[9][:31], lines[9][:30]+"f", 1), ErrEntries},
		{"the entry left out, the hash redone", receipt, edit(t, page, map[string]any{"entrants": 9, "entries_hash": EntriesHash([]byte(withoutMine))}), withoutMine, ErrNotListed},
		{"a place the rule does not give", mustJSON(t, wrongPlace), page, string(d.list), ErrPlace},
		{"issued before the commitment", mustJSON(t, early), page, string(d.list), ErrBeforeCommitment},
		{"a page of another room", receipt, edit(t, page, map[string]any{"room": "shop2"}), string(d.list), ErrOtherRoom},
		{"an unknown state", receipt, edit(t, page, map[string]any{"state": "done"}), string(d.list), ErrMalformed},
		{"a page name twice", receipt, []byte(`{"seed":"` + otherSeed.String() + `",` + string(page[1:])), string(d.list), ErrMalformed},
		{"a name twice deep inside", receipt, edit(t, page, map[string]any{"admitted_by_reason": json.RawMessage(`{"a":[{"b":1,"b":2}]}`)}), string(d.list), ErrMalformed},
		{"nested too deep", receipt, edit(t, page, map[string]any{"x": json.RawMessage(strings.Repeat("[", 40) + strings.Repeat("]", 40))}), string(d.list), ErrMalformed},
		{"an oversized page", receipt, append(bytes.Clone(page), bytes.Repeat([]byte(" "), MaxPage)...), string(d.list), ErrTooLarge},
		{"a public key cut", receipt, edit(t, page, map[string]any{"public_key": d.signer.PublicKey()[:42]}), string(d.list), ErrMalformed},
	} {
		if _, err := Verify(c.receipt, c.page, strings.NewReader(c.list)); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// A page may carry members this version does not know: a later version's additions
// do not stop a verifier.
func TestVerifyReadsPastNewPageMembers(t *testing.T) {
	d := newDraw(t, "shop", "event-1", testSecret, 4, rand.New(rand.NewPCG(15, 16)))
	page := edit(t, d.page(t, StateDrawn), map[string]any{"merkle_root": "x", "per_minute": []any{map[string]any{"in_order": 1}}})
	if _, err := Verify(mustJSON(t, d.drawn[0]), page, bytes.NewReader(d.list)); err != nil {
		t.Fatal(err)
	}
}

// Verify reads the list once and no further than the page's count and a byte: a
// list that goes on for ever costs what the page said, not more.
func TestVerifyReadsNoFurtherThanTheCount(t *testing.T) {
	d := newDraw(t, "shop", "event-1", testSecret, 4, rand.New(rand.NewPCG(17, 18)))
	endless := &countingReader{}
	_, err := Verify(mustJSON(t, d.drawn[0]), d.page(t, StateDrawn), endless)
	if !errors.Is(err, ErrEntries) {
		t.Fatalf("an endless list: %v", err)
	}
	if endless.n > 1<<20 {
		t.Fatalf("read %d bytes of an endless list for a page of 4 entrants", endless.n)
	}
}

type countingReader struct{ n int }

func (c *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	c.n += len(p)
	return len(p), nil
}
