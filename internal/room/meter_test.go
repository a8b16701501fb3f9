package room

import (
	"sync"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// What the meter holds is taken whole, once: every request added from many
// goroutines at once is in exactly one sample, with its time in the total.
func TestMeterTakesEachRequestOnce(t *testing.T) {
	var m meter
	const goroutines, each = 8, 1000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				m.add(time.Duration(g*each+i)*time.Microsecond+time.Duration(i), i%10 == 0)
			}
		})
	}
	var got queue.Sample
	var total time.Duration
	for range 3 { // takes while the adds run, and after
		s, sum := m.take()
		got.Add(s)
		total += sum
	}
	wg.Wait()
	s, sum := m.take()
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
	if s, sum := m.take(); s.Count() != 0 || sum != 0 {
		t.Fatalf("a second take found %d requests, %v", s.Count(), sum)
	}
}
