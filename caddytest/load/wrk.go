package main

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
)

// A wrkTarget is one URL driven by wrk, with the headers (a Cookie, say) every request
// carries. Each target of a comparison is given the same headers, so they cost alike.
type wrkTarget struct {
	name    string
	url     string
	headers []string
	script  string // optional Lua script path (wrk -s)
}

var requestsPerSec = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)

// wrk runs one round against t: a client process of its own, as load from outside is.
func (r *rig) wrk(ctx context.Context, t wrkTarget, connections int) (float64, error) {
	args := []string{"-t1", fmt.Sprintf("-c%d", connections), fmt.Sprintf("-d%ds", max(1, int(r.o.duration.Seconds())))}
	for _, h := range t.headers {
		args = append(args, "-H", h)
	}
	if t.script != "" {
		args = append(args, "-s", t.script)
	}
	out, err := exec.CommandContext(ctx, "wrk", append(args, t.url)...).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("wrk %s: %v\n%s", t.name, err, out)
	}
	m := requestsPerSec.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("wrk %s: no Requests/sec in\n%s", t.name, out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// wrkRounds runs o.rounds interleaved rounds over targets (so machine noise hits all
// of them alike) and returns each target's median requests per second.
func (r *rig) wrkRounds(ctx context.Context, targets []wrkTarget, connections int) (map[string]float64, error) {
	samples := map[string][]float64{}
	for range r.o.rounds {
		for _, t := range targets {
			rps, err := r.wrk(ctx, t, connections)
			if err != nil {
				return nil, err
			}
			samples[t.name] = append(samples[t.name], rps)
		}
	}
	medians := map[string]float64{}
	for name, s := range samples {
		slices.Sort(s)
		medians[name] = s[len(s)/2]
	}
	return medians, nil
}
