package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
)

// A row is one figure of the table. value and baseline are formatted by the section
// (units differ); ratio is value ÷ baseline where the figure has a baseline; target
// says what we promise and verdict whether this run met it.
type row struct {
	section  string
	figure   string
	value    string
	baseline string
	ratio    string
	target   string
	verdict  string // "met", "NOT MET", or "" for a figure without a target
}

// ratioRow is a figure measured against a baseline from the same run; it meets its
// target when value ÷ baseline ≥ atLeast (a target of 0 means none).
func ratioRow(figure string, value, baseline float64, unit string, atLeast float64) row {
	r := row{figure: figure, value: num(value) + " " + unit, baseline: num(baseline) + " " + unit}
	if baseline > 0 {
		ratio := value / baseline
		r.ratio = fmt.Sprintf("%.2f", ratio)
		if atLeast > 0 {
			r.target = fmt.Sprintf("≥ %.2f", atLeast)
			r.verdict = verdict(ratio >= atLeast)
		}
	}
	return r
}

// The rows below take a figure's samples, one per round in round order, and the
// baseline's from the same rounds. Their ratio is the median of the rounds' own
// ratios: a neighbour's burst that slows one round slows both sides of that round's
// ratio, where it would skew a ratio of the two medians. Value and baseline are the
// medians.

// roundsRow is ratioRow from samples: it meets its target when the ratio ≥ atLeast.
func roundsRow(figure string, value, baseline []float64, unit string, atLeast float64) row {
	r := row{figure: figure, value: num(median(value)) + " " + unit, baseline: num(median(baseline)) + " " + unit}
	ratio := pairedRatio(value, baseline)
	r.ratio = fmt.Sprintf("%.2f", ratio)
	if atLeast > 0 {
		r.target = fmt.Sprintf("≥ %.2f", atLeast)
		r.verdict = verdict(ratio >= atLeast)
	}
	return r
}

// floorRow is a figure whose target is absolute (median ≥ atLeast, in unit), beside a
// baseline in a unit of its own that gives it scale: the ratio says how close to that
// baseline it comes, the verdict only whether the floor was reached.
func floorRow(figure string, value []float64, unit string, baseline []float64, baseUnit string, atLeast float64) row {
	r := row{figure: figure, value: num(median(value)) + " " + unit, baseline: num(median(baseline)) + " " + baseUnit}
	r.ratio = fmt.Sprintf("%.2f", pairedRatio(value, baseline))
	if atLeast > 0 {
		r.target = "≥ " + num(atLeast) + " " + unit
		r.verdict = verdict(median(value) >= atLeast)
	}
	return r
}

// growthRow is a cost against the same cost at a smaller scale; it meets its target
// when the ratio ≤ atMost (a target of 0 means none).
func growthRow(figure string, value, baseline []float64, unit string, atMost float64) row {
	r := row{figure: figure, value: num(median(value)) + " " + unit, baseline: num(median(baseline)) + " " + unit}
	ratio := pairedRatio(value, baseline)
	r.ratio = fmt.Sprintf("%.2f", ratio)
	if atMost > 0 {
		r.target = fmt.Sprintf("≤ %.2f", atMost)
		r.verdict = verdict(ratio <= atMost)
	}
	return r
}

// pairedRatio is the median over the rounds of value ÷ baseline of the same round.
func pairedRatio(value, baseline []float64) float64 { return median(pairRatios(value, baseline)) }

// pairRatios are value ÷ baseline of each round.
func pairRatios(value, baseline []float64) []float64 {
	var ratios []float64
	for i := range min(len(value), len(baseline)) {
		if baseline[i] > 0 {
			ratios = append(ratios, value[i]/baseline[i])
		}
	}
	return ratios
}

// median is the middle of s (the upper middle of an even count), 0 for none. It
// leaves s in its order: samples are paired by round.
func median(s []float64) float64 {
	if len(s) == 0 {
		return 0
	}
	sorted := slices.Clone(s)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "NOT MET"
}

// num formats a measured quantity with three significant digits and a k/M suffix.
func num(v float64) string {
	switch a := abs(v); {
	case a >= 10e6:
		return fmt.Sprintf("%.0fM", v/1e6)
	case a >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case a >= 10e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	case a >= 1e3:
		return fmt.Sprintf("%.2fk", v/1e3)
	case a >= 100 || v == float64(int64(v)):
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// machineRows open the table with what the figures were measured on.
func machineRows() []row {
	host, _ := os.Hostname()
	return []row{{section: "machine", figure: fmt.Sprintf("%s, %d cores, %s, %s/%s, load average %s at start",
		host, runtime.NumCPU(), cpuModel(), runtime.GOOS, runtime.GOARCH, loadAverage())}}
}

// loadAverage is the one-minute load average: on a shared machine, how busy the others
// kept it (a run at a load far above the core count measures the neighbours).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	avg, _, _ := strings.Cut(string(b), " ")
	return avg
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func printTable(w io.Writer, rows []row, markdown bool) {
	if markdown {
		fmt.Fprintln(w, "| section | figure | value | baseline | ratio | target | |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
		for _, r := range rows {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", r.section, r.figure, r.value, r.baseline, r.ratio, r.target, r.verdict)
		}
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SECTION\tFIGURE\tVALUE\tBASELINE\tRATIO\tTARGET\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.section, r.figure, r.value, r.baseline, r.ratio, r.target, r.verdict)
	}
	tw.Flush()
}

// pairRows prints the rows of the same figures measured over several transports (plain
// HTTP, then TLS) side by side: row i of each, then row i+1 of each. Rows that have no
// counterpart follow at the end of their own list's place.
func pairRows(lists ...[]row) []row {
	var out []row
	for i := 0; ; i++ {
		more := false
		for _, l := range lists {
			if i < len(l) {
				out = append(out, l[i])
				more = true
			}
		}
		if !more {
			return out
		}
	}
}

// overTransports runs measure over each transport the options ask for (plain HTTP,
// then TLS) and pairs its rows, the TLS ones labelled; an error ends the runs with the
// rows measured so far.
func overTransports(o options, measure func(t transport) ([]row, error)) ([]row, error) {
	var lists [][]row
	for _, t := range o.transports() {
		rows, err := measure(t)
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

// labelRows marks rows as measured over another transport: "TLS: " before each figure,
// after its indent.
func labelRows(rows []row, label string) []row {
	out := slices.Clone(rows)
	for i, r := range out {
		rest := strings.TrimLeft(r.figure, " ")
		out[i].figure = r.figure[:len(r.figure)-len(rest)] + label + ": " + rest
	}
	return out
}
