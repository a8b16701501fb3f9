package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"
)

func init() {
	register(section{
		name:  "admitted",
		about: "an admitted visitor against bare Caddy on one instance, in many short alternating rounds, with the ratio's 95 % interval",
		order: 25,
		run:   runAdmitted,
	})
}

// The admitted visitor's goal (0.97 of bare Caddy) is closer than this machine's noise
// allows one round to tell: bare Caddy swings by a tenth between rounds a minute apart,
// and the http section's rounds are a minute apart, seven targets each. So this section
// measures that one figure alone, on an instance of its own that holds nothing else (no
// queued waiters for the garbage collector to mark), in short rounds that alternate
// bare, admitted, admitted, bare, ... so that a drift of the machine meets both sides
// alike, and gives the median of the pairs' ratios with the interval that holds it 95
// times in 100 (a bootstrap over the pairs).
const (
	admittedGoal  = 0.97
	admittedPairs = 20
	admittedRound = 2 * time.Second
)

func runAdmitted(ctx context.Context, r *rig, o options) ([]row, error) {
	pairs, round := admittedPairs, admittedRound
	if o.quick {
		pairs, round = 2, time.Second
	}
	var lists [][]row
	for _, t := range o.transports() {
		rows, err := measureAdmitted(ctx, r, t, pairs, round)
		if t.secure {
			rows = labelRows(rows, t.label())
		}
		lists = append(lists, rows)
		if err != nil {
			return pairRows(lists...), err
		}
	}
	return pairRows(lists...), nil
}

func measureAdmitted(ctx context.Context, r *rig, t transport, pairs int, round time.Duration) ([]row, error) {
	in, err := r.startCaddyOver("admitted"+fileSuffix(t), caddyConfig{
		"bare":     `respond "ok"`,
		"admitted": "\twaiting_room {\n\t\tname admitted\n\t\tcapacity 1000000000\n\t\tsession_ttl 1h\n\t}\n\trespond \"ok\"",
	}, t)
	if err != nil {
		return nil, err
	}
	defer in.stop()
	cookie, err := admittedCookie(ctx, in.url("admitted"))
	if err != nil {
		return nil, err
	}
	// Both sides get the same request, the room's cookie included.
	headers := append([]string{"Cookie: " + cookie}, browserHeaders...)
	bare := wrkTarget{name: "bare", url: in.url("bare") + "/", headers: headers, serve: []*proc{in.proc}, duration: round}
	admitted := wrkTarget{name: "admitted", url: in.url("admitted") + "/", headers: headers, serve: []*proc{in.proc}, duration: round}
	before, err := readRoom(ctx, in, "admitted")
	if err != nil {
		return nil, err
	}
	for _, tg := range []wrkTarget{bare, admitted} { // warm up: a cold instance's first round is its slowest
		if _, err := r.wrk(ctx, tg, httpConnections); err != nil {
			return nil, err
		}
	}
	var s admittedSamples
	for i := range pairs {
		order := []wrkTarget{bare, admitted}
		if i%2 == 1 {
			order = []wrkTarget{admitted, bare}
		}
		for _, tg := range order {
			res, perCPU, err := r.wrkRound(ctx, tg, httpConnections)
			if err != nil {
				return nil, err
			}
			s.add(tg.name == "admitted", res.rps, perCPU)
		}
	}
	after, err := readRoom(ctx, in, "admitted")
	if err != nil {
		return nil, err
	}
	if after.AdmittedTotal != before.AdmittedTotal || after.Waiting != before.Waiting {
		return nil, fmt.Errorf("admitted%s: %d new admissions and %d waiters during the rounds: the cookie stopped working",
			fileSuffix(t), after.AdmittedTotal-before.AdmittedTotal, after.Waiting-before.Waiting)
	}
	if r.o.profiles != "" {
		for _, tg := range []wrkTarget{bare, admitted} {
			tg.duration = 10 * time.Second // enough samples to see a few per cent apart
			if err := r.profileRound(ctx, in, tg, fmt.Sprintf("admitted%s-%s.pprof", fileSuffix(t), tg.name)); err != nil {
				return nil, err
			}
		}
	}
	fmt.Fprintf(os.Stderr, "   %s: bare %s, admitted %s req/s\n", in.url("admitted"), strings.Join(nums(s.bare), ", "), strings.Join(nums(s.admitted), ", "))
	figure := fmt.Sprintf("admitted visitor ÷ bare, %d alternating pairs of %v rounds", pairs, round)
	return []row{
		intervalRow(figure+": requests per second", s.admitted, s.bare, "req/s"),
		intervalRow(figure+": requests per CPU second of Caddy", s.admittedCPU, s.bareCPU, "req/CPU-s"),
	}, nil
}

// admittedSamples are the section's rounds, one of each side per pair, in pair order.
type admittedSamples struct {
	bare, admitted       []float64 // requests per second
	bareCPU, admittedCPU []float64 // requests per CPU second of Caddy
}

func (s *admittedSamples) add(admitted bool, rps, perCPU float64) {
	if admitted {
		s.admitted, s.admittedCPU = append(s.admitted, rps), append(s.admittedCPU, perCPU)
		return
	}
	s.bare, s.bareCPU = append(s.bare, rps), append(s.bareCPU, perCPU)
}

// intervalRow is value against baseline, paired by round: the median of the pairs'
// ratios, with its 95 % interval beside it; the goal is met when the median reaches it.
func intervalRow(figure string, value, baseline []float64, unit string) row {
	r := roundsRow(figure, value, baseline, unit, admittedGoal)
	lo, hi := medianInterval(pairRatios(value, baseline))
	r.ratio += fmt.Sprintf(" (95 %%: %.3f–%.3f)", lo, hi)
	return r
}

// medianInterval is the 95 % interval of the median of s, by resampling s with
// replacement (the percentile bootstrap). The generator's seed is fixed, so the same
// samples give the same interval.
func medianInterval(s []float64) (lo, hi float64) {
	if len(s) == 0 {
		return 0, 0
	}
	const resamples = 4000
	rng := rand.New(rand.NewPCG(1, 2))
	medians := make([]float64, resamples)
	draw := make([]float64, len(s))
	for k := range medians {
		for i := range draw {
			draw[i] = s[rng.IntN(len(s))]
		}
		medians[k] = median(draw)
	}
	slices.Sort(medians)
	return medians[resamples*25/1000], medians[resamples*975/1000-1]
}
