package draw

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"
)

// A drawFixture is one room's draw as the room would run it: a seed committed when
// entries open, entrants joining with receipts, the list at close, the draw.
type drawFixture struct {
	signer    *Signer
	room      string
	draw      string
	seed      Seed
	committed time.Time
	entries   []Entry // in arrival order
	list      []byte
	order     []Entry
	// joined are the receipts given at join (no place); drawn those given after the
	// draw (with the place), in arrival order.
	joined, drawn []Receipt
}

var testCommitted = time.Date(2031, 6, 1, 9, 0, 0, 0, time.UTC)

// newDraw runs a draw of n entrants in room with a seed from r.
func newDraw(t testing.TB, room, draw string, secret []byte, n int, r *rand.Rand) *drawFixture {
	t.Helper()
	s, err := NewSigner(room, secret)
	if err != nil {
		t.Fatal(err)
	}
	d := &drawFixture{signer: s, room: room, draw: draw, committed: testCommitted}
	d.seed, d.entries = randomDraw(r, n)
	for i, e := range d.entries {
		rc, err := s.Sign(Receipt{Room: room, Draw: draw, Commitment: d.seed.Commitment(), Entry: e,
			Ticket: uint64(1000 + i), Issued: testCommitted.Add(time.Duration(i) * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		d.joined = append(d.joined, rc)
	}
	if d.list, err = List(d.entries); err != nil {
		t.Fatal(err)
	}
	d.order = Order(d.seed, d.entries)
	place := map[Entry]uint64{}
	for i, e := range d.order {
		place[e] = uint64(i + 1)
	}
	for i, e := range d.entries {
		rc := d.joined[i]
		rc.Place = place[e]
		rc.Ticket = uint64(1000) + place[e] - 1 // the drawn tickets: the same set, in drawn order
		rc.Issued = testCommitted.Add(time.Hour)
		if rc, err = s.Sign(rc); err != nil {
			t.Fatal(err)
		}
		d.drawn = append(d.drawn, rc)
	}
	return d
}

// page is the draw's public page in state, as JSON.
func (d *drawFixture) page(t testing.TB, state string) []byte {
	t.Helper()
	p := Page{Room: d.room, Draw: d.draw, State: state, Committed: d.committed,
		Commitment: d.seed.Commitment(), PublicKey: d.signer.PublicKey(),
		AdmittedByReason: json.RawMessage(`{"in_order":3,"pass":1}`)}
	if state != StateOpen {
		p.Entrants = uint64(len(d.entries))
		p.EntriesHash = EntriesHash(d.list)
		p.EntriesURL = "/draw/" + d.draw + "/entries"
	}
	if state == StateDrawn {
		p.Seed = d.seed.String()
	}
	b, err := p.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// edit returns page (a JSON object) with its members changed: a nil value removes
// the member.
func edit(t testing.TB, page []byte, set map[string]any) []byte {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(page))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	for k, v := range set {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
