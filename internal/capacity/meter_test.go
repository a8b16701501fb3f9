package capacity

import (
	"sync"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// What the meter holds is taken whole, once: every request added from many
// goroutines at once is in exactly one sample, with its time in the total.
func TestMeterTakesEachRequestOnce(t *testing.T) {
	m := new(Meter)
	const goroutines, each = 8, 1000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			id := queue.NewVisitorID()
			for i := range each {
				m.Add(id, time.Duration(g*each+i)*time.Microsecond+time.Duration(i), i%10 == 0)
			}
		})
	}
	var got queue.Sample
	var total time.Duration
	for range 3 { // takes while the adds run, and after
		_, s, sum := m.Take()
		got.Add(s)
		total += sum
	}
	wg.Wait()
	_, s, sum := m.Take()
	got.Add(s)
	total += sum
	if got.Count() != goroutines*each || got.Failed != goroutines*each/10 {
		t.Fatalf("took %d requests, %d failed; want %d, %d", got.Count(), got.Failed, goroutines*each, goroutines*each/10)
	}
	var want time.Duration
	for g := range goroutines {
		for i := range each {
			want += time.Duration(g*each+i)*time.Microsecond + time.Duration(i)
		}
	}
	if total != want {
		t.Fatalf("total %v, want %v", total, want)
	}
	if r, s, sum := m.Take(); s.Count() != 0 || r.Count() != 0 || sum != 0 {
		t.Fatalf("a second take found %d requests, %v", s.Count(), sum)
	}
}

// The control law reads visitors, not requests: of one visitor's requests in a
// period, the first PerVisitor, however many come at once; the others' all; and the
// next period reads the visitor afresh. The metrics' sample holds every request.
func TestMeterReadsEachVisitorUpToPerVisitor(t *testing.T) {
	m := new(Meter)
	flooder := queue.NewVisitorID()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 500 {
				m.Add(flooder, time.Millisecond, true)
			}
		})
	}
	const others, each = 12, 3
	for range others {
		id := queue.NewVisitorID()
		for range each {
			m.Add(id, 600*time.Millisecond, false)
		}
	}
	wg.Wait()
	read, all, _ := m.Take()
	if read.Count() != PerVisitor+others*each || read.Failed != PerVisitor {
		t.Fatalf("the reading holds %d requests, %d failed; want the flooder's %d and the others' %d, %d failed",
			read.Count(), read.Failed, PerVisitor, others*each, PerVisitor)
	}
	if all.Count() != 8*500+others*each || all.Failed != 8*500 {
		t.Fatalf("the metrics' sample holds %d requests, %d failed; want %d, %d", all.Count(), all.Failed, 8*500+others*each, 8*500)
	}
	if p := read.Percentile(0.9); p < 500*time.Millisecond {
		t.Fatalf("the reading's p90 is %v: the flooder's fast requests outvoted the others' 600ms", p)
	}
	for range 20 {
		m.Add(flooder, time.Millisecond, false)
	}
	if read, all, _ := m.Take(); read.Count() != PerVisitor || all.Count() != 20 {
		t.Fatalf("the next period reads %d of the flooder's 20 requests (metrics %d), want %d", read.Count(), all.Count(), PerVisitor)
	}
}

// More visitors in a period than the table holds: those without a slot are not
// read, but every request is in the metrics, and the next period has room again.
func TestMeterFullTable(t *testing.T) {
	m := new(Meter)
	const n = visitorSlots + 100
	for range n {
		m.Add(queue.NewVisitorID(), time.Millisecond, false)
	}
	read, all, _ := m.Take()
	if all.Count() != n || read.Count() > visitorSlots || read.Count() < visitorSlots/2 {
		t.Fatalf("%d visitors: read %d, metrics %d; want at most the table's %d read, all in the metrics", n, read.Count(), all.Count(), visitorSlots)
	}
	id := queue.NewVisitorID()
	m.Add(id, time.Millisecond, false)
	if read, _, _ := m.Take(); read.Count() != 1 {
		t.Fatalf("the next period read %d of one visitor's request, want 1", read.Count())
	}
}
