package draw

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/draw/drawtest"
)

// The docs' verifier, run on receipts the package signs, agrees with the room: every
// entrant's place, from the receipt after the draw and the one from before it; the
// stages before the draw; a FIFO ticket. A room name with the characters JSON
// writers disagree on (U+2028, a quote, a tab) holds the signed bytes alike.
func TestDocsVerifierScript(t *testing.T) {
	run := drawtest.Verifier(t, fairnessPage)
	room := "drop ☂ \u2028\"\t"
	d := newDraw(t, room, "event-2031-06-01T10:00:00Z", testSecret, 12, rand.New(rand.NewPCG(31, 32)))
	page := d.page(t, StateDrawn)
	for i := range d.entries {
		receipts := []Receipt{d.drawn[i]}
		if i%4 == 0 {
			receipts = append(receipts, d.joined[i])
		}
		for _, r := range receipts {
			out, ok := run(mustJSON(t, r), page, d.list)
			want := fmt.Sprintf("your place was %d, and the draw is the one committed at 2031-06-01T09:00:00Z", d.drawn[i].Place)
			if !ok || out != want {
				t.Fatalf("entrant %d (place %d): %q", i, d.drawn[i].Place, out)
			}
		}
	}
	if out, ok := run(mustJSON(t, d.joined[3]), d.page(t, StateOpen), nil); !ok || !strings.Contains(out, "still open") {
		t.Errorf("open: %q", out)
	}
	if out, ok := run(mustJSON(t, d.joined[3]), d.page(t, StateClosed), d.list); !ok || !strings.Contains(out, "one of the 12 entrants") {
		t.Errorf("closed: %q", out)
	}
	fifo, err := d.signer.Sign(Receipt{Room: room, Draw: FIFO, Entry: NewEntry(), Ticket: 77, Issued: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	fifoPage, _ := Page{Room: room, Draw: FIFO, State: StateOpen, PublicKey: d.signer.PublicKey()}.MarshalJSON()
	if out, ok := run(mustJSON(t, fifo), fifoPage, nil); !ok || !strings.Contains(out, "your ticket was 77 in arrival order") {
		t.Errorf("FIFO: %q", out)
	}
	files := docsFiles(t)
	if out, ok := run([]byte(files["receipt.json"]), []byte(files["page.json"]), []byte(files["entries.txt"])); !ok || out+"\n" != files["output"] {
		t.Errorf("the page's example: %q, the page says %q", out, files["output"])
	}
}

// The docs' verifier refuses what the package refuses, each for its reason: a
// receipt with one character changed (a digit of its place, the last character of
// its signature, whose spare bits a lax decoder ignores), a receipt of another draw,
// a page whose seed is not its commitment, and the other ways a receipt or page can
// be wrong.
func TestDocsVerifierScriptRefuses(t *testing.T) {
	run := drawtest.Verifier(t, fairnessPage)
	r := rand.New(rand.NewPCG(33, 34))
	d := newDraw(t, "drop", "event-2031-06-01T10:00:00Z", testSecret, 12, r)
	next := newDraw(t, "drop", "event-2031-06-02T10:00:00Z", testSecret, 12, r)
	again := newDraw(t, "drop", "event-2031-06-01T10:00:00Z", testSecret, 12, r)
	other := newDraw(t, "shop", "event-2031-06-01T10:00:00Z", testSecret, 12, r)
	page := d.page(t, StateDrawn)
	mine := d.drawn[4]
	good := string(mustJSON(t, mine))
	change := func(old, new string) []byte {
		if !strings.Contains(good, old) {
			t.Fatalf("%q is not in %s", old, good)
		}
		return []byte(strings.Replace(good, old, new, 1))
	}
	sig := mine.Signature
	// The last character's low 4 bits are past the 64 bytes: a lax decoder reads
	// this one as the same signature.
	lastSig := sig[:85] + string(sig[85]+1)
	a, _ := base64.RawURLEncoding.DecodeString(sig)
	b, _ := base64.RawURLEncoding.DecodeString(lastSig)
	if !bytes.Equal(a, b) {
		t.Fatalf("%s and %s decode to different signatures", sig, lastSig)
	}
	wrongPlace := mine
	wrongPlace.Place = mine.Place%12 + 1
	wrongPlace, _ = d.signer.Sign(wrongPlace)
	early := d.joined[4]
	early.Issued = testCommitted.Add(-time.Second)
	early, _ = d.signer.Sign(early)
	withoutMine := strings.Replace(string(d.list), mine.Entry.String()+"\n", "", 1)
	place := fmt.Sprint(mine.Place)
	otherPlace := fmt.Sprint(mine.Place%9 + 1)
	for _, c := range []struct {
		name          string
		receipt, page []byte
		entries       string
		says          string
	}{
		{"a digit of the place changed", change(`"place":`+place, `"place":`+otherPlace), page, string(d.list), "signature is not the room's"},
		{"the signature's last character changed", change(sig, lastSig), page, string(d.list), "signature is not 64 bytes"},
		{"a character of the entry changed", change(mine.Entry.String()[:31], mine.Entry.String()[:30]+string("10"[mine.Entry.String()[30]&1])), page, string(d.list), "signature is not the room's"},
		{"a receipt of another draw", mustJSON(t, next.drawn[0]), page, string(d.list), `the receipt is of draw "event-2031-06-02T10:00:00Z"`},
		{"a receipt of the draw's name committed again", mustJSON(t, again.drawn[0]), page, string(d.list), "the receipt is of the draw committed to"},
		{"a receipt of another room", mustJSON(t, other.drawn[0]), page, string(d.list), `the receipt is of room "shop"`},
		{"a page whose seed is not its commitment", mustJSON(t, mine), edit(t, page, map[string]any{"seed": NewSeed().String()}), string(d.list), "seed does not hash to its commitment"},
		{"a seed before the draw", mustJSON(t, d.joined[4]), edit(t, d.page(t, StateClosed), map[string]any{"seed": d.seed.String()}), string(d.list), "seed before the draw"},
		{"a member twice", change(`"ticket":`, `"place":1,"ticket":`), page, string(d.list), `gives "place" twice`},
		{"an unknown member", change(`"ticket":`, `"admitted":1,"ticket":`), page, string(d.list), `member "admitted"`},
		{"a ticket not whole", change(`"ticket":`+fmt.Sprint(mine.Ticket), `"ticket":`+fmt.Sprint(mine.Ticket)+".0"), page, string(d.list), "not a whole number"},
		{"an oversized receipt", append([]byte(good), bytes.Repeat([]byte(" "), MaxReceipt)...), page, string(d.list), "more than 8192 bytes"},
		{"cut", []byte(good[:len(good)/2]), page, string(d.list), "not JSON"},
		{"forged under another key", mustJSON(t, mine), edit(t, page, map[string]any{"public_key": other.signer.PublicKey()}), string(d.list), "signature is not the room's"},
		{"an entries list that is not the page's", mustJSON(t, mine), page, string(d.list[:len(d.list)-33]) + "ffffffffffffffffffffffffffffffff\n", "not the page's entries_hash"},
		{"the entry left out, the hash redone", mustJSON(t, mine), edit(t, page, map[string]any{"entrants": 11, "entries_hash": EntriesHash([]byte(withoutMine))}), withoutMine, "is not among the 11 entrants"},
		{"a place the rule does not give", mustJSON(t, wrongPlace), page, string(d.list), "the rule gives place " + place},
		{"issued before the commitment", mustJSON(t, early), page, string(d.list), "before the commitment"},
	} {
		out, ok := run(c.receipt, c.page, []byte(c.entries))
		if ok || !strings.HasPrefix(out, "refused: ") || !strings.Contains(out, c.says) {
			t.Errorf("%s: the script says %q, want a refusal saying %q", c.name, out, c.says)
		}
		if _, err := Verify(c.receipt, c.page, strings.NewReader(c.entries)); err == nil {
			t.Errorf("%s: the script refuses, Verify accepts", c.name)
		}
	}
}
