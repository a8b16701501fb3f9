package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAdaptSection runs the adapt section at smoke scale (phases of 5 s) and holds it
// to what the shop's physics make true on any machine: every room had requests
// answered and visitors let in; the capacity guessed 4× too high kept the shop's p90
// over the target (40 visitors on a shop that serves 4 at once, 100 ms each, take a
// second); the one guessed 4× too low used at most half of it (2 visitors on a shop of
// 4); adapt's row says how it settled; and the plot has each room's two lines.
func TestAdaptSection(t *testing.T) {
	if _, err := exec.LookPath("wrk"); err != nil && os.Getenv("CI") == "" {
		t.Skip("wrk is not on PATH: the load harness cannot run (Debian: apt-get install wrk)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	plot := filepath.Join(t.TempDir(), "adapt.svg")
	rows, err := run(ctx, options{quick: true, only: []string{"adapt"}, plot: plot})
	if err != nil {
		t.Fatal(err)
	}
	byFigure := map[string]row{}
	for _, r := range rows {
		if r.section == "adapt" {
			byFigure[r.figure] = r
		}
	}
	if len(byFigure) != 3*4+1 {
		printTable(os.Stderr, rows, false)
		t.Fatalf("%d adapt rows, want 13 (4 a room, and adapt's settling)", len(byFigure))
	}
	for _, room := range []string{"capacity guessed 4× too high", "capacity guessed 4× too low", "adapt"} {
		served := byFigure[room+": the shop's throughput, share of its most"]
		if v, err := parseNum(strings.Fields(served.value)[0]); err != nil || v <= 0 {
			t.Errorf("%s: the shop served %q", room, served.value)
		}
	}
	if r := byFigure["capacity guessed 4× too high: the shop's p90 time to first byte"]; r.verdict != "NOT MET" {
		t.Errorf("40 visitors on a shop of 4 met the p90 target: %+v", r)
	}
	if r := byFigure["capacity guessed 4× too low: the shop's throughput, share of its most"]; r.verdict != "NOT MET" || mustNum(t, r.ratio) > 0.5 {
		t.Errorf("2 visitors on a shop of 4 used more than half of it: %+v", r)
	}
	if r := byFigure["adapt: into 0.5–1.5× the shop's right capacity for good, after the start, the halving, the recovery"]; strings.Count(r.value, ",") != 2 {
		t.Errorf("adapt's settling row %q does not have the three phases", r.value)
	}
	svg, err := os.ReadFile(plot)
	if err != nil {
		t.Fatal(err)
	}
	// Each room's capacity and p90, and the shop's right capacity.
	if n := strings.Count(string(svg), "<polyline"); n != 3*2+1 {
		t.Errorf("the plot has %d lines, want 7", n)
	}
}

func mustNum(t *testing.T, s string) float64 {
	t.Helper()
	v, err := parseNum(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return v
}
