package draw

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"
)

// FuzzVerify gives Verify what a visitor, or anyone handing a visitor files, controls
// completely: the receipt, the page and the entries list. It must never panic, and
// must accept only what the room signed: any receipt it accepts is, member for
// member, one of the receipts the room gave out, and its place the one the room
// drew. A receipt it can read back writes out and reads back as itself.
func FuzzVerify(f *testing.F) {
	d := newDraw(f, "shop", "event-1", testSecret, 6, rand.New(rand.NewPCG(21, 22)))
	fifoSigner, _ := NewSigner("shop", testSecret)
	fifo, err := fifoSigner.Sign(Receipt{Room: "shop", Draw: FIFO, Entry: Entry{7}, Ticket: 9, Issued: testCommitted})
	if err != nil {
		f.Fatal(err)
	}
	fifoPage, _ := Page{Room: "shop", Draw: FIFO, State: StateOpen, PublicKey: fifoSigner.PublicKey()}.MarshalJSON()
	signed := map[Receipt]uint64{fifo: 0}
	for i := range d.entries {
		signed[d.joined[i]] = d.drawn[i].Place
		signed[d.drawn[i]] = d.drawn[i].Place
	}
	pages := [][]byte{d.page(f, StateOpen), d.page(f, StateClosed), d.page(f, StateDrawn)}
	for i, r := range []Receipt{d.drawn[0], d.joined[1], d.drawn[5]} {
		for _, p := range pages {
			f.Add(mustJSON(f, r), p, d.list)
		}
		f.Add(mustJSON(f, r)[:40+i*30], pages[2], d.list[:33*i])
	}
	f.Add(mustJSON(f, fifo), fifoPage, []byte(nil))
	f.Add([]byte(`{"room":"shop","room":"shop2"}`), []byte(`{"a":{"b":[1,{"c":2,"c":3}]}}`), []byte("\n"))
	f.Add([]byte(`{"ticket":1e400,"place":-0}`), []byte(`[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]`), []byte{0xff})

	f.Fuzz(func(t *testing.T, receipt, page, entries []byte) {
		res, err := Verify(receipt, page, bytes.NewReader(entries))
		if err == nil {
			r := res.Receipt
			r.Signature = "" // one signature per receipt: the members decide
			found := false
			for s, place := range signed {
				s.Signature = ""
				if s == r {
					found = true
					if res.Place != 0 && res.Place != place {
						t.Fatalf("accepted with place %d, the room drew %d", res.Place, place)
					}
				}
			}
			if !found {
				t.Fatalf("accepted a receipt the room never signed: %s", receipt)
			}
		}
		if r, err := ParseReceipt(receipt); err == nil {
			out, err := r.MarshalJSON()
			if err != nil {
				t.Fatalf("read %s, cannot write it: %v", receipt, err)
			}
			if back, err := ParseReceipt(out); err != nil || back != r {
				t.Fatalf("%s wrote %s, which reads back as %+v, %v", receipt, out, back, err)
			}
		}
		if p, err := ParsePage(page); err == nil {
			out, err := p.MarshalJSON()
			if err != nil {
				t.Fatalf("read %s, cannot write it: %v", page, err)
			}
			back, err := ParsePage(out)
			if err != nil || back.Room != p.Room || back.Seed != p.Seed || back.EntriesHash != p.EntriesHash || !back.Committed.Equal(p.Committed) {
				t.Fatalf("%s wrote %s, which reads back as %+v, %v", page, out, back, err)
			}
		}
	})
}

// FuzzParseReceipt checks the reader alone, on any bytes: no panic, no more than
// MaxReceipt read, and what it accepts is a receipt a room could sign.
func FuzzParseReceipt(f *testing.F) {
	s, _ := NewSigner("shop ☂", testSecret)
	r, err := s.Sign(Receipt{Room: "shop ☂", Draw: "event-1", Commitment: NewSeed().Commitment(), Entry: Entry{1}, Ticket: 1, Issued: time.Unix(1_900_000_000, 0), Place: 3})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(mustJSON(f, r))
	f.Add([]byte(`{"room":"\u2028","draw":"fifo","entry":"00000000000000000000000000000000","ticket":0,"issued":"1970-01-01T00:00:00Z","signature":""}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseReceipt(data)
		if err != nil {
			return
		}
		if len(data) > MaxReceipt {
			t.Fatalf("read a receipt of %d bytes", len(data))
		}
		if _, err := r.Canonical(); err != nil {
			t.Fatalf("read %s, which no room signs: %v", data, err)
		}
	})
}
