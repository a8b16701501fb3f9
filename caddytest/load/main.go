// Command load is the waiting room's load harness. It builds Caddy with the plugin,
// starts real Caddy processes (and a real redis-server where a figure needs one),
// drives them from separate client processes, and prints one table. Every figure is a
// ratio to a baseline measured in the same run, or is printed beside one: the machines
// we measure on are shared and noisy, so absolute numbers from different runs do not
// compare, while two numbers taken a minute apart on the same machine do.
//
// Run it from the caddytest folder (its own module, which holds the test-only
// dependencies):
//
//	cd caddytest
//	go run ./load                 # every section, full scale
//	go run ./load -quick          # every section, small scale (a smoke run)
//	go run ./load -only http,ws   # some sections
//	go run ./load -tls            # and the http, admitted and ws sections over HTTPS too
//	go run ./load -docs ../docs/performance.md   # and rewrite the manual's table
//
// It needs redis-server and wrk on PATH (Debian: redis-server, wrk).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"
)

// options are the harness's flags, shared by every section.
type options struct {
	quick     bool          // small scale: a smoke run that proves the harness works
	only      []string      // sections to run; all when empty
	plot      string        // where the adapt section writes its plot, if anywhere
	waiters   int           // concurrent waiting WebSockets for the ws section
	instances int           // Caddy processes sharing one Redis in the ws section
	clients   int           // client processes holding those WebSockets
	duration  time.Duration // how long each wrk round runs
	rounds    int           // interleaved wrk rounds; medians are reported
	profiles  string        // a folder to write CPU and heap profiles into; none when empty
	markdown  bool          // print the table as Markdown
	docs      string        // a Markdown file whose table block the run rewrites; none when empty
	keep      bool          // keep the run's folder (Caddyfiles, logs) instead of removing it
	liveness  []int         // the liveness section's room sizes; its default scale when empty
	tls       bool          // run the http, admitted and ws sections over HTTPS too (tls.go)
}

// A section measures one group of figures. Sections register themselves from their
// own files (init), so each lives in a file of its own and main knows none by name.
type section struct {
	name  string
	about string
	order int // sections run in ascending order
	run   func(ctx context.Context, r *rig, o options) ([]row, error)
}

var sections []section

func register(s section) { sections = append(sections, s) }

func main() {
	if len(os.Args) > 1 && os.Args[1] == clientCommand {
		os.Exit(clientMain(os.Args[2:]))
	}
	var o options
	var only string
	flag.BoolVar(&o.quick, "quick", false, "small scale: a smoke run that proves the harness works")
	flag.StringVar(&only, "only", "", "comma-separated sections to run (default: all)")
	flag.IntVar(&o.waiters, "waiters", 100_000, "concurrent waiting WebSockets in the ws section")
	flag.IntVar(&o.instances, "instances", 6, "Caddy processes sharing one Redis in the ws section")
	flag.IntVar(&o.clients, "clients", 6, "client processes holding the WebSockets")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "length of each wrk round")
	flag.IntVar(&o.rounds, "rounds", 5, "interleaved wrk rounds (medians are reported)")
	flag.StringVar(&o.profiles, "profiles", "", "folder to write CPU and heap profiles of the Caddy processes (and the first ws client) into")
	flag.BoolVar(&o.markdown, "markdown", false, "print the table as Markdown")
	flag.StringVar(&o.docs, "docs", "", "after a run with no failed section, write its table into this file between "+tableBegin+" and "+tableEnd+" (../docs/performance.md)")
	flag.BoolVar(&o.tls, "tls", false, "also run the http, admitted, key and ws sections over HTTPS (Caddy's local CA), their rows beside the plain ones")
	flag.StringVar(&o.plot, "plot", "", "write the adapt section's plot (SVG) into this file (../docs/adaptive-capacity.svg)")
	flag.BoolVar(&o.keep, "keep", false, "keep the run's folder (Caddyfiles and every process's log) and print its path")
	flag.Func("liveness", "comma-separated room sizes for the liveness section (default 10000,100000,1000000)", func(s string) error {
		for f := range strings.SplitSeq(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				return fmt.Errorf("bad size %q", f)
			}
			o.liveness = append(o.liveness, n)
		}
		return nil
	})
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./load (in caddytest/) [flags]\n\nsections:\n")
		for _, s := range sortedSections() {
			fmt.Fprintf(flag.CommandLine.Output(), "  %-8s %s\n", s.name, s.about)
		}
		fmt.Fprintf(flag.CommandLine.Output(), "\nflags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if only != "" {
		o.only = strings.Split(only, ",")
	}
	if o.quick {
		o.waiters, o.instances, o.clients = min(o.waiters, 3_000), min(o.instances, 2), min(o.clients, 2)
		o.duration, o.rounds = min(o.duration, time.Second), 1
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rows, err := run(ctx, o)
	printTable(os.Stdout, rows, o.markdown)
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
	if o.docs != "" {
		if err := writeDocs(o.docs, rows); err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(1)
		}
	}
}

// run runs the chosen sections on one rig and returns their rows. A failing section
// stops the run: its figures would be missing, and a partial table misleads.
func run(ctx context.Context, o options) ([]row, error) {
	for _, name := range o.only {
		if !slices.ContainsFunc(sections, func(s section) bool { return s.name == name }) {
			return nil, fmt.Errorf("no section %q (see -help)", name)
		}
	}
	r, err := newRig(ctx, o)
	if err != nil {
		return nil, err
	}
	defer r.close()
	rows := machineRows()
	for _, s := range sortedSections() {
		if len(o.only) > 0 && !slices.Contains(o.only, s.name) {
			continue
		}
		fmt.Fprintf(os.Stderr, "== %s: %s\n", s.name, s.about)
		start := time.Now()
		got, err := s.run(ctx, r, o)
		for i := range got {
			got[i].section = s.name
		}
		rows = append(rows, got...)
		if err != nil {
			return rows, fmt.Errorf("%s: %w", s.name, err)
		}
		fmt.Fprintf(os.Stderr, "== %s done in %v (load average %s)\n", s.name, time.Since(start).Round(time.Second), loadAverage())
	}
	return rows, nil
}

func sortedSections() []section {
	s := slices.Clone(sections)
	slices.SortStableFunc(s, func(a, b section) int { return a.order - b.order })
	return s
}
