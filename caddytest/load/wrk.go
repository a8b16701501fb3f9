package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A wrkTarget is one URL driven by wrk, with the headers (a Cookie, say) every request
// carries. Each target of a comparison is given the same headers, so they cost alike.
type wrkTarget struct {
	name    string
	url     string
	headers []string
	script  string // optional Lua script path (wrk -s)
	// duration is how long a round runs; the run's -duration when zero.
	duration time.Duration
	// serve are the processes that answer (Caddy, and Redis behind it): their CPU time
	// per answered request is recorded for each round, a cost the machine's neighbours
	// hardly move, beside a throughput they move a lot.
	serve []*proc
}

// A wrkResult is what wrk reports for one target: requests per second (the median
// over the rounds, from wrkRuns, and each round's in round order) and the requests
// answered (all rounds together).
type wrkResult struct {
	rps      float64
	samples  []float64
	requests int64
	// perCPU is requests answered per CPU second of the target's serve processes,
	// one per round in round order (none without serve).
	perCPU []float64
}

var (
	requestsPerSec = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	requestsDone   = regexp.MustCompile(`(\d+) requests in `)
	// A round with failed requests measures the failures, not the path: it is an error.
	wrkFailures = regexp.MustCompile(`Non-2xx or 3xx responses|Socket errors`)
	// errRequestsFailed is wrapped by the error of such a round.
	errRequestsFailed = errors.New("requests failed")
)

// wrk runs one round against t: a client process of its own, as load from outside is.
// A round that answered nothing and failed nothing is run once more, four times as
// long: at smoke scale (a second), the TLS handshakes of every connection can take the
// whole round on a busy machine, and wrk counts only requests answered in the round. A
// room that answers nothing still fails, in the longer round.
func (r *rig) wrk(ctx context.Context, t wrkTarget, connections int) (wrkResult, error) {
	length := max(time.Second, r.roundLength(t))
	res, err := r.wrkFor(ctx, t, connections, length)
	if errors.Is(err, errNothingAnswered) {
		fmt.Fprintf(os.Stderr, "   %s: nothing answered in %v, none failed; once more for %v\n", t.name, length, 4*length)
		res, err = r.wrkFor(ctx, t, connections, 4*length)
	}
	return res, err
}

// errNothingAnswered is wrapped by the error of a round in which no request was
// answered and none failed.
var errNothingAnswered = errors.New("no request was answered")

func (r *rig) wrkFor(ctx context.Context, t wrkTarget, connections int, length time.Duration) (wrkResult, error) {
	// A request unanswered for 10 s is a failure; wrk's default, 2 s, is what a slow
	// page can take on a machine its neighbours are busy with.
	args := []string{"-t1", fmt.Sprintf("-c%d", connections), fmt.Sprintf("-d%ds", int(length.Seconds())), "--timeout", "10s"}
	for _, h := range t.headers {
		args = append(args, "-H", h)
	}
	if t.script != "" {
		args = append(args, "-s", t.script)
	}
	out, err := exec.CommandContext(ctx, "wrk", append(args, t.url)...).CombinedOutput()
	if err != nil {
		return wrkResult{}, fmt.Errorf("wrk %s: %v\n%s", t.name, err, out)
	}
	rps, done := requestsPerSec.FindSubmatch(out), requestsDone.FindSubmatch(out)
	if rps == nil || done == nil {
		return wrkResult{}, fmt.Errorf("wrk %s: no Requests/sec in\n%s", t.name, out)
	}
	if wrkFailures.Match(out) {
		return wrkResult{}, fmt.Errorf("wrk %s: %w\n%s", t.name, errRequestsFailed, out)
	}
	var res wrkResult
	res.rps, _ = strconv.ParseFloat(string(rps[1]), 64)
	res.requests, _ = strconv.ParseInt(string(done[1]), 10, 64)
	if res.requests == 0 {
		return wrkResult{}, fmt.Errorf("wrk %s: %w\n%s", t.name, errNothingAnswered, out)
	}
	return res, nil
}

// wrkRounds runs o.rounds interleaved rounds over targets (so machine noise hits all
// of them alike) and returns each target's median requests per second.
func (r *rig) wrkRounds(ctx context.Context, targets []wrkTarget, connections int) (map[string]float64, error) {
	runs, err := r.wrkRuns(ctx, targets, connections)
	if err != nil {
		return nil, err
	}
	medians := map[string]float64{}
	for name, res := range runs {
		medians[name] = res.rps
	}
	return medians, nil
}

// wrkRuns is wrkRounds that also counts the requests each target answered.
func (r *rig) wrkRuns(ctx context.Context, targets []wrkTarget, connections int) (map[string]wrkResult, error) {
	samples := map[string][]float64{}
	results := map[string]wrkResult{}
	for range r.o.rounds {
		for _, t := range targets {
			res, perCPU, err := r.wrkRound(ctx, t, connections)
			if err != nil {
				return nil, err
			}
			samples[t.name] = append(samples[t.name], res.rps)
			total := results[t.name]
			total.requests += res.requests
			if len(t.serve) > 0 {
				total.perCPU = append(total.perCPU, perCPU)
			}
			results[t.name] = total
		}
	}
	for _, t := range targets {
		s := samples[t.name]
		fmt.Fprintf(os.Stderr, "   %-24s %s req/s\n", t.name, strings.Join(nums(s), ", "))
		total := results[t.name]
		total.rps, total.samples = median(s), s
		results[t.name] = total
	}
	return results, nil
}

// roundLength is how long a round of t runs: its own duration, else the run's.
func (r *rig) roundLength(t wrkTarget) time.Duration {
	if t.duration > 0 {
		return t.duration
	}
	return r.o.duration
}

// wrkRound is one wrk round against t, and the requests it answered per CPU second of
// t's serve processes (0 without serve).
func (r *rig) wrkRound(ctx context.Context, t wrkTarget, connections int) (wrkResult, float64, error) {
	cpu0, err := cpuTime(t.serve)
	if err != nil {
		return wrkResult{}, 0, err
	}
	res, err := r.wrk(ctx, t, connections)
	if err != nil {
		return wrkResult{}, 0, err
	}
	cpu1, err := cpuTime(t.serve)
	if err != nil {
		return wrkResult{}, 0, err
	}
	spent := max(cpu1-cpu0, 10*time.Millisecond) // at least the one tick it may round to
	return res, float64(res.requests) / spent.Seconds(), nil
}

// nums formats each of s with num.
func nums(s []float64) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = num(v)
	}
	return out
}

// cpuTime is the CPU time the processes have used so far, together.
func cpuTime(procs []*proc) (time.Duration, error) {
	var sum time.Duration
	for _, p := range procs {
		d, err := p.cpuTime()
		if err != nil {
			return 0, err
		}
		sum += d
	}
	return sum, nil
}
