package main

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestHTTPAndStoreSections runs the http, key, admitted, durable and store sections at smoke scale (one
// round of a second) and holds them to what every run must show whatever the machine: each
// row present with a figure above zero. The sections themselves fail a run whose wrk
// rounds saw a failed or no request, whose rooms did not count every request as the
// visitor its row names, or whose stores did not hold exactly the visitors joined and
// answer exact positions. How fast is not asserted: that is what the table is for.
func TestHTTPAndStoreSections(t *testing.T) {
	for _, tool := range []string{"redis-server", "wrk"} {
		if _, err := exec.LookPath(tool); err != nil {
			msg := tool + " is not on PATH: the load harness cannot run (Debian: apt-get install redis-server wrk)"
			if os.Getenv("CI") != "" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	o := options{quick: true, only: []string{"store", "http", "key", "admitted", "durable"}, duration: time.Second, rounds: 1, tls: true}
	rows, err := run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}

	// http: two stores, each over plain HTTP and TLS.
	// admitted: against bare, throughput and cost, the one-line handler against bare and
	// the room, and adapt on against bare and against off, each over plain HTTP and TLS.
	// durable: the admitted visitor and joins, on disk against off, throughput and cost,
	// and the line saved, over plain HTTP and TLS.
	want := map[string]int{"machine": 1, "http": 2 * 2 * (2*4 + 3), "store": 4 + 2*2*len(scaleFor(o).sizes), "admitted": 2 * 6,
		"durable": 2 * 5}
	got := map[string]int{}
	for _, r := range rows {
		got[r.section]++
		if r.section == "machine" {
			continue
		}
		value, _, _ := strings.Cut(r.value, " ")
		if v, err := parseNum(value); err != nil || v <= 0 {
			t.Errorf("%s: %q is not a figure above zero", r.figure, r.value)
		}
	}
	for section, n := range want {
		if got[section] != n {
			t.Errorf("section %s has %d rows, want %d", section, got[section], n)
		}
	}
	if t.Failed() {
		printTable(os.Stderr, rows, false)
	}
}

// parseNum reads back what num wrote.
func parseNum(s string) (float64, error) {
	scale := 1.0
	switch {
	case strings.HasSuffix(s, "k"):
		s, scale = strings.TrimSuffix(s, "k"), 1e3
	case strings.HasSuffix(s, "M"):
		s, scale = strings.TrimSuffix(s, "M"), 1e6
	}
	v, err := strconv.ParseFloat(s, 64)
	return v * scale, err
}
