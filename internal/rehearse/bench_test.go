package rehearse

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// twoHourSale is a two-hour sale of n visitors: two fifths in the first five
// minutes, the rest over the next 115, with the usual people (some give up, some
// phones sleep, a few never arrive, half check out), at a capacity under which the
// line clears within the two hours or just after.
func twoHourSale(n int) (Sale, Variant) {
	sale := Sale{
		Arrivals: []Segment{{N: n * 2 / 5, Over: 5 * time.Minute}, {N: n - n*2/5, Over: 115 * time.Minute}},
		Stay:     Spread{Base: 5 * time.Minute, Spread: 2 * time.Minute},
		GiveUp:   []GiveUp{{Share: 0.10, After: 15 * time.Minute}, {Share: 0.10, After: 45 * time.Minute}},
		Sleep:    Sleep{Share: 0.05, For: Spread{Base: 3 * time.Minute, Spread: time.Minute}},
		NoShows:  0.01,
		Checkout: 0.5,
	}
	return sale, Variant{Label: fmt.Sprintf("capacity %d", n/16), Config: configFor(n / 16)}
}

// BenchmarkRehearse measures simulated visitors per second of real time:
//
//	go test -run '^$' -bench Rehearse -benchtime 1x ./internal/rehearse/
func BenchmarkRehearse(b *testing.B) {
	for _, n := range []int{100_000, 500_000, 1_000_000} {
		b.Run(fmt.Sprintf("visitors=%d", n), func(b *testing.B) {
			sale, v := twoHourSale(n)
			var res []*Result
			var err error
			start := time.Now()
			for b.Loop() {
				if res, err = Rehearse(context.Background(), sale, []Variant{v}, Options{Seed: 1}); err != nil {
					b.Fatal(err)
				}
			}
			took := time.Since(start) / time.Duration(b.N)
			b.ReportMetric(float64(n)/took.Seconds(), "visitors/s")
			b.ReportMetric(took.Seconds(), "s/sale")
			s := res[0].Summary
			b.ReportMetric(float64(*s.ClearsAfter)/60, "clears-after-min")
			b.ReportMetric(float64(s.MaxWaiting), "max-waiting")
		})
	}
}
