package caddytest

import (
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"testing"
)

var (
	wrkRateLine = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkNon2xx   = regexp.MustCompile(`Non-2xx`)
)

// wrkRate runs wrk (one thread, 50 connections) against target for duration, with
// the extra arguments, and returns its requests per second. A run that saw a non-2xx
// answer or printed no rate fails b.
func wrkRate(b *testing.B, wrk, duration, target string, args ...string) float64 {
	b.Helper()
	out, err := exec.Command(wrk, append([]string{"-t1", "-c50", "-d" + duration, target}, args...)...).CombinedOutput()
	if err != nil {
		b.Fatalf("wrk: %v\n%s", err, out)
	}
	m := wrkRateLine.FindSubmatch(out)
	if m == nil || wrkNon2xx.Match(out) {
		b.Fatalf("wrk saw errors or no rate:\n%s", out)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// median is the middle value of v, which it leaves as it was.
func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}
