package draw

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// The draw of a million entrants, as the instance that draws computes it: the order
// (a million HMACs and a sort). go test -run '^$' -bench . -benchtime 3x ./internal/draw/
func BenchmarkOrderMillion(b *testing.B) {
	seed, entries := randomDraw(rand.New(rand.NewPCG(1, 1)), 1_000_000)
	b.ResetTimer()
	for b.Loop() {
		Order(seed, entries)
	}
}

// A visitor's check of a million entrants' draw: the list read, hashed and ranked.
func BenchmarkVerifyMillion(b *testing.B) {
	d := newDraw(b, "shop", "event-1", testSecret, 0, rand.New(rand.NewPCG(2, 2)))
	d.seed, d.entries = randomDraw(rand.New(rand.NewPCG(3, 3)), 1_000_000)
	var err error
	if d.list, err = List(d.entries); err != nil {
		b.Fatal(err)
	}
	r, err := d.signer.Sign(Receipt{Room: "shop", Draw: "event-1", Commitment: d.seed.Commitment(), Entry: d.entries[500_000], Issued: testCommitted})
	if err != nil {
		b.Fatal(err)
	}
	receipt, page := mustJSON(b, r), d.page(b, StateDrawn)
	b.ResetTimer()
	for b.Loop() {
		if _, err := Verify(receipt, page, bytes.NewReader(d.list)); err != nil {
			b.Fatal(err)
		}
	}
}
