// The ETA's figures are measurements of one goroutine's arithmetic: the race
// detector has nothing to find in them, and takes twenty times as long.

//go:build !race

package rehearse

import (
	"cmp"
	"context"
	"flag"
	"math"
	"slices"
	"testing"
	"time"
)

// The ETA's honesty in rehearsal (docs: the goal is a median error of at most 15 %
// in a steady sale, 25 % with 30 % of the visitors giving up):
//
//	go test -run ETAHonesty -v ./internal/rehearse/ -eta.seeds 3

// etaSale is a steady sale: n arrivals spread over an hour against a room that
// serves about 150 a minute (capacity 1,125; a shopper holds a slot 7.5 minutes
// on average: a 5-minute stay, and session_ttl after it for the half who do not
// check out), so a line builds for the hour and then clears.
func etaSale(n int, giveUp []GiveUp) (Sale, Variant) {
	return Sale{
		Arrivals: []Segment{{N: n, Over: time.Hour}},
		Stay:     Spread{Base: 5 * time.Minute, Spread: 2 * time.Minute},
		Checkout: 0.5,
		GiveUp:   giveUp,
	}, Variant{Label: "capacity 1125", Config: configFor(1125)}
}

// -eta.seeds plays each sale with more seeds: its figures vary with the seed by a
// point or two.
var etaSeeds = flag.Uint64("eta.seeds", 1, "the seeds TestETAHonesty plays each sale with")

var etaCases = []struct {
	name   string
	n      int
	giveUp []GiveUp
	goal   float64 // the median error's
}{
	// 200 a minute: a line that grows to about 2,600 and waits of up to 17 minutes.
	{"steady", 12000, nil, 0.15},
	// 300 a minute, and people giving up as they wait: 30 % of them in all.
	{"30% give up", 18000, []GiveUp{{Share: 0.15, After: 3 * time.Minute}, {Share: 0.15, After: 8 * time.Minute}, {Share: 0.15, After: 15 * time.Minute}}, 0.25},
}

func TestETAHonesty(t *testing.T) {
	for _, tc := range etaCases {
		for seed := uint64(1); seed <= *etaSeeds; seed++ {
			sale, v := etaSale(tc.n, tc.giveUp)
			res, err := Rehearse(context.Background(), sale, []Variant{v}, Options{Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			s := res[0].Summary
			e := s.ETA
			t.Logf("%s, seed %d: %.1f%% gave up; the ETA shown to %d on arrival was off by %.1f%% (median), %.1f%% (p90), bias %+.1f%% (median)",
				tc.name, seed, 100*float64(s.GaveUp)/float64(s.Visitors), e.Shown, 100**e.ErrorP50, 100**e.ErrorP90, 100**e.BiasP50)
			if tc.giveUp == nil && *e.ErrorP50 > tc.goal {
				t.Errorf("a steady sale's ETA is off by %.1f%% (median), over the goal of %.0f%%", 100**e.ErrorP50, 100*tc.goal)
			}
		}
	}
}

// BenchmarkETAEstimators measures, on the same sales as TestETAHonesty, the error
// of the ETA other estimators would have shown each visitor on arrival, from what
// the room can know at that instant: the position it showed, and what happened in
// the estimator's window (three minutes) before. It changes nothing in the room;
// it says what in queue.Estimator would make the ETA honest where it is not:
//
//	go test -run '^$' -bench ETAEstimators -benchtime 1x ./internal/rehearse/
//
// Each is reported for every arrival shown an ETA, and for those from minute 15 on,
// once the line has stood a few minutes (-from-15m). The estimators: "now", the room's (position ÷ every admission in the window);
// "line", position ÷ the admissions from the line only; "drain", position ÷ the
// line's drain, the admissions from the line and the places that left it
// (visitors who went quiet, sent away at queue_ttl); "hazard", the drain of the
// places ahead only, each leaving at the rate the line's places do:
// ln(1 + δ·position ÷ a) ÷ δ; "realized", position ÷ how fast the places of those
// let in from the line in the window moved (their positions on arrival ÷ their
// waits).
func BenchmarkETAEstimators(b *testing.B) {
	for _, tc := range etaCases {
		b.Run(tc.name, func(b *testing.B) {
			var all, settled map[string][]float64
			for b.Loop() {
				sale, v := etaSale(tc.n, tc.giveUp)
				s := sale.withDefaults()
				r, err := playOne(context.Background(), &s, v, 0, Options{Seed: 1, Horizon: 24 * time.Hour})
				if err != nil {
					b.Fatal(err)
				}
				all, settled = estimatorErrors(r, 0), estimatorErrors(r, int64(15*time.Minute))
			}
			for _, name := range []string{"now", "line", "drain", "hazard", "realized"} {
				for _, set := range []struct {
					what string
					errs []float64
				}{{"", all[name]}, {"-from-15m", settled[name]}} {
					slices.Sort(set.errs)
					b.ReportMetric(100*rank(set.errs, 0.5), name+set.what+"-p50-%")
					b.ReportMetric(100*rank(set.errs, 0.9), name+set.what+"-p90-%")
				}
			}
		})
	}
}

// estimatorErrors is each estimator's error size for every visitor shown an ETA on
// arrival at from or later who got in.
func estimatorErrors(r *run, from int64) map[string][]float64 {
	const window = int64(3 * time.Minute)
	queueTTL := int64(r.eng.queueTTL)
	// What the room can count, by time: admissions from the line, the places that
	// went quiet (the store sends them away at queue_ttl of silence, after the last
	// beat: half a heartbeat interval before the close, on average), and each
	// admitted waiter's place on arrival and wait.
	type admission struct{ at, pos, wait int64 }
	var fromLine []admission
	var left []int64
	for i := range r.vis {
		v := &r.vis[i]
		switch {
		case v.admitted >= 0 && v.eta != etaNone:
			fromLine = append(fromLine, admission{v.admitted, int64(v.position), v.admitted - v.arrived})
		case v.state == stGaveUp:
			left = append(left, v.ended+queueTTL-int64(r.eng.heartbeatEvery())/2)
		}
	}
	slices.SortFunc(fromLine, func(a, b admission) int { return cmp.Compare(a.at, b.at) })
	slices.Sort(left)
	count := func(ts []int64, from, to int64) float64 {
		i, _ := slices.BinarySearch(ts, from)
		j, _ := slices.BinarySearch(ts, to)
		return float64(j - i)
	}
	ats := make([]int64, len(fromLine))
	for i, a := range fromLine {
		ats[i] = a.at
	}
	out := map[string][]float64{}
	for i := range r.vis {
		v := &r.vis[i]
		if v.eta < 0 || v.admitted < 0 || v.arrived < from {
			continue
		}
		t, p := v.arrived, float64(v.position)
		real := time.Duration(v.admitted - v.arrived).Seconds()
		add := func(name string, eta float64) {
			if math.IsNaN(eta) || math.IsInf(eta, 0) {
				eta = 0 // an estimator without evidence shows nothing useful
			}
			out[name] = append(out[name], math.Abs(eta-real)/max(real, etaFloor))
		}
		add("now", float64(v.eta))
		span := float64(min(window, t)) / 1e9
		a := count(ats, t-window, t) / span
		d := count(left, t-window, t) / span
		add("line", p/a)
		add("drain", p/(a+d))
		waiting := 1.0
		if m := r.rec.minuteOf(t); m > 0 {
			waiting = max(1, float64(r.rec.minutes[m-1].waiting))
		}
		if delta := d / waiting; delta > 0 {
			add("hazard", math.Log1p(delta*p/a)/delta)
		} else {
			add("hazard", p/a)
		}
		i0, _ := slices.BinarySearch(ats, t-window)
		i1, _ := slices.BinarySearch(ats, t)
		var pos, wait float64
		for _, x := range fromLine[i0:i1] {
			pos, wait = pos+float64(x.pos), wait+float64(x.wait)/1e9
		}
		add("realized", p/(pos/wait))
	}
	return out
}
