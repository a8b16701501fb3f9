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
// queued waiters for the garbage collector to mark), in short rounds that take turns
// (bare, header, admitted; header, admitted, bare; ...) so that a drift of the machine
// meets every side alike, and gives the median of the rounds' ratios with the interval
// that holds it 95 times in 100 (a bootstrap over the rounds).
//
// header is bare Caddy behind one of the lightest handlers Caddy has, one that sets a response
// header: what any handler costs a request that passes through it, whatever it does.
// The room's own work is what the admitted visitor costs beyond that.
//
// adapted is the admitted visitor of a room with the adaptive capacity on: each
// request is timed as every admitted request is, and the instance reports its
// measurements to the store every control period and decides on them.
const (
	adaptedGoal    = 0.95
	admittedGoal   = 0.97
	admittedRounds = 20
	admittedRound  = 2 * time.Second
)

func runAdmitted(ctx context.Context, r *rig, o options) ([]row, error) {
	rounds, length := admittedRounds, admittedRound
	if o.quick {
		rounds, length = 2, time.Second
	}
	return overTransports(o, func(t transport) ([]row, error) { return measureAdmitted(ctx, r, t, rounds, length) })
}

func measureAdmitted(ctx context.Context, r *rig, t transport, rounds int, length time.Duration) ([]row, error) {
	in, err := r.startCaddyOver("admitted"+fileSuffix(t), caddyConfig{
		"bare":     `respond "ok"`,
		"header":   "\theader X-Handler 1\n\trespond \"ok\"",
		"admitted": "\twaiting_room {\n\t\tname admitted\n\t\tcapacity 1000000000\n\t\tsession_ttl 1h\n\t}\n\trespond \"ok\"",
		"adapted":  "\twaiting_room {\n\t\tname adapted\n\t\tcapacity 1000000000\n\t\tsession_ttl 1h\n\t\tadapt {\n\t\t\tlatency 1s\n\t\t}\n\t}\n\trespond \"ok\"",
	}, t)
	if err != nil {
		return nil, err
	}
	defer in.stop()
	cookie, err := admittedCookie(ctx, in.url("admitted"))
	if err != nil {
		return nil, err
	}
	adaptedCookie, err := admittedCookie(ctx, in.url("adapted"))
	if err != nil {
		return nil, err
	}
	// Every side gets the same request, the rooms' cookies included.
	headers := append([]string{"Cookie: " + cookie + "; " + adaptedCookie}, browserHeaders...)
	var targets []wrkTarget
	for _, site := range []string{"bare", "header", "admitted", "adapted"} {
		targets = append(targets, wrkTarget{name: site, url: in.url(site) + "/", headers: headers, serve: []*proc{in.proc}, duration: length})
	}
	before, err := readRoom(ctx, in, "admitted")
	if err != nil {
		return nil, err
	}
	for _, tg := range targets { // warm up: a cold instance's first round is its slowest
		if _, err := r.wrk(ctx, tg, httpConnections); err != nil {
			return nil, err
		}
	}
	rps, perCPU := map[string][]float64{}, map[string][]float64{}
	for i := range rounds {
		for k := range targets {
			tg := targets[(i+k)%len(targets)]
			res, cpu, err := r.wrkRound(ctx, tg, httpConnections)
			if err != nil {
				return nil, err
			}
			rps[tg.name], perCPU[tg.name] = append(rps[tg.name], res.rps), append(perCPU[tg.name], cpu)
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
		for _, tg := range targets {
			tg.duration = 10 * time.Second // enough samples to see a few per cent apart
			if err := r.profileRound(ctx, in, tg, fmt.Sprintf("admitted%s-%s.pprof", fileSuffix(t), tg.name)); err != nil {
				return nil, err
			}
		}
	}
	for _, tg := range targets {
		fmt.Fprintf(os.Stderr, "   %s %s: %s req/s\n", t.scheme(), tg.name, strings.Join(nums(rps[tg.name]), ", "))
	}
	figure := fmt.Sprintf("admitted visitor ÷ bare, %d rounds of %v taking turns", rounds, length)
	return []row{
		intervalRow(figure+": requests per second", rps["admitted"], rps["bare"], "req/s", admittedGoal),
		intervalRow(figure+": requests per CPU second of Caddy", perCPU["admitted"], perCPU["bare"], "req/CPU-s", 0),
		intervalRow("  a one-line Caddy handler (header) ÷ bare, the same rounds: requests per second", rps["header"], rps["bare"], "req/s", 0),
		intervalRow("  admitted visitor ÷ the one-line handler, the same rounds: requests per second", rps["admitted"], rps["header"], "req/s", 0),
		intervalRow("admitted visitor, adapt on ÷ bare, the same rounds: requests per second", rps["adapted"], rps["bare"], "req/s", adaptedGoal),
		intervalRow("  admitted visitor, adapt on ÷ adapt off, the same rounds: requests per second", rps["adapted"], rps["admitted"], "req/s", 0),
	}, nil
}

// intervalRow is value against baseline, paired by round: the median of the rounds'
// ratios, with its 95 % interval beside it; a goal (0 for none) is met when the median
// reaches it.
func intervalRow(figure string, value, baseline []float64, unit string, goal float64) row {
	r := roundsRow(figure, value, baseline, unit, goal)
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
