package rehearse

import (
	"iter"
	"math/rand/v2"
	"time"
)

// Person is one visitor of a sale as the rehearsal plays it: when it arrives,
// and what it will do. A test that plays the same sale against a real Caddy
// (load clients following the schedule in real time) takes its people from here,
// so both sides play the same ones.
type Person struct {
	Arrives time.Duration // since the sale's start
	Stay    time.Duration // in the shop, from its entry to its last request
	// GivesUpAfter is the wait at which it closes the tab, if still in line; -1
	// never.
	GivesUpAfter time.Duration
	// SleepsAfter is the wait at which its phone sleeps, for SleepsFor; -1 never.
	SleepsAfter, SleepsFor time.Duration
	// NoShow says its turn comes while it is away for good; Checkout that its last
	// request is a checkout the shop revokes.
	NoShow, Checkout bool
}

// People are the sale's visitors for seed, in order of arrival, numbered from 0.
func People(sale Sale, seed uint64) iter.Seq2[int, Person] {
	s := sale.withDefaults()
	return func(yield func(int, Person) bool) {
		pcg := rand.NewPCG(0, 0)
		r := rand.New(pcg)
		arr := newArrivals(s.Arrivals)
		for n := 0; ; n++ {
			at, ok := arr.next()
			if !ok {
				return
			}
			arr.take()
			t := drawTraits(r, pcg, seed, n, &s)
			p := Person{Arrives: time.Duration(at), Stay: time.Duration(t.stay), GivesUpAfter: time.Duration(t.giveUp),
				SleepsAfter: time.Duration(t.sleepAt), SleepsFor: time.Duration(t.sleepFor), NoShow: t.noShow, Checkout: t.checkout}
			if t.sleepAt < 0 {
				p.SleepsFor = -1
			}
			if !yield(n, p) {
				return
			}
		}
	}
}
