package rehearse

import (
	"fmt"
	"math"
	"strings"
)

// charts are the report's charts, each run on the same axes.
func (rep *Report) charts() []chart {
	xMax := 0.0
	for _, r := range rep.Results {
		xMax = max(xMax, float64(len(r.Minutes)))
	}
	const xLabel = "Minutes since the sale opened"
	one := len(rep.Results) == 1
	var out []chart
	// The charts by minute of arrival span the arrivals.
	arrivalsMax := math.Ceil(rep.Sale.Length().Minutes())

	// Arrivals per minute: the same for every run.
	c := chart{id: "arrivals", title: "Arrivals per minute", xLabel: xLabel, yLabel: "People a minute", xMax: arrivalsMax}
	c.series = append(c.series, rep.line(0, "arrivals", rep.Results[0].Minutes, func(m *Minute) float64 { return float64(m.Arrivals) }))
	c.clip()
	c.desc = fmt.Sprintf("The sale: %s visitors arriving over %s, their first request in each minute.", formatCount(float64(rep.Sale.Visitors())), formatDuration(rep.Sale.Length()))
	out = append(out, c)

	// People waiting, and when the line clears.
	c = chart{id: "waiting", title: "People waiting", xLabel: xLabel, yLabel: "People waiting", xMax: xMax}
	var words []string
	for i, r := range rep.Results {
		c.series = append(c.series, rep.line(i, r.Label, r.Minutes, func(m *Minute) float64 { return float64(m.Waiting) }))
		s := &r.Summary
		w := fmt.Sprintf("%s: at most %s waiting; the line %s", r.Label, formatCount(float64(s.MaxWaiting)), clearsText(s))
		if s.ClearsAfter != nil {
			c.marks = append(c.marks, mark{x: float64(*s.ClearsAfter) / 60, label: r.Label + ": the line clears", color: runColors[i%len(runColors)], dash: "2 2"})
		}
		words = append(words, w)
	}
	c.desc = "People waiting in line at the end of each minute, as the room counts them (present, not away). " + strings.Join(words, ". ") + "."
	out = append(out, c)

	// The wait by minute of arrival.
	c = chart{id: "wait", title: "The wait, by minute of arrival", xLabel: xLabel, yLabel: "Wait (minutes)", xMax: arrivalsMax}
	words = words[:0]
	for i, r := range rep.Results {
		p50 := rep.line(i, label(one, r.Label, "median"), r.Minutes, func(m *Minute) float64 { return minutesOf(m.WaitP50) })
		p90 := rep.line(i, label(one, r.Label, "90th percentile"), r.Minutes, func(m *Minute) float64 { return minutesOf(m.WaitP90) })
		p90.width = 1.5
		if one {
			p90.dash = runDashes[1]
		}
		c.series = append(c.series, p50, p90)
		words = append(words, fmt.Sprintf("%s: median %s, 90th percentile %s", r.Label, formatSeconds(r.Summary.WaitP50), formatSeconds(r.Summary.WaitP90)))
	}
	c.clip()
	c.desc = "The wait of the visitors who arrived in each minute and got in, from their first request to the shop. " + strings.Join(words, ". ") + "."
	out = append(out, c)

	// Admissions per minute.
	c = chart{id: "admissions", title: "Admissions per minute", xLabel: xLabel, yLabel: "People a minute", xMax: xMax}
	words = words[:0]
	for i, r := range rep.Results {
		c.series = append(c.series, rep.line(i, label(one, r.Label, "admissions"), r.Minutes, func(m *Minute) float64 { return float64(m.Admissions) }))
		peak, at := 0, 0
		for _, m := range r.Minutes {
			if m.Admissions > peak {
				peak, at = m.Admissions, m.Minute
			}
		}
		words = append(words, fmt.Sprintf("%s: at most %s a minute, in minute %d", r.Label, formatCount(float64(peak)), at))
	}
	c.desc = "Visitors let in each minute, at arrival and from the line. " + strings.Join(words, ". ") + "."
	out = append(out, c)

	// Gave up.
	c = chart{id: "gave-up", title: "How many gave up", xLabel: xLabel, yLabel: "People, in all so far", xMax: xMax}
	words = words[:0]
	for i, r := range rep.Results {
		gave, missed := 0.0, 0.0
		g := rep.line(i, label(one, r.Label, "gave up"), r.Minutes, func(m *Minute) float64 { gave += float64(m.GaveUp); return gave })
		c.series = append(c.series, g)
		if r.Summary.NoShows > 0 {
			ns := rep.line(i, label(one, r.Label, "never came when their turn did"), r.Minutes, func(m *Minute) float64 { missed += float64(m.NoShows); return missed })
			ns.width = 1.5
			if one {
				ns.dash = runDashes[1]
			}
			c.series = append(c.series, ns)
		}
		words = append(words, fmt.Sprintf("%s: %s gave up, %s never came when their turn did", r.Label, formatCount(float64(r.Summary.GaveUp)), formatCount(float64(r.Summary.NoShows))))
	}
	c.desc = "Visitors who closed the page while in line, counted as they left, and those whose turn came while they were away for good. " + strings.Join(words, ". ") + "."
	out = append(out, c)

	// The ETA against the real wait.
	c = chart{id: "eta", title: "The ETA shown on arrival, against the real wait", xLabel: xLabel, yLabel: "Minutes", xMax: arrivalsMax}
	words = words[:0]
	for i, r := range rep.Results {
		real := rep.line(i, label(one, r.Label, "real wait, median"), r.Minutes, func(m *Minute) float64 { return minutesOf(m.ETAWaitP50) })
		shown := rep.line(i, label(one, r.Label, "ETA shown, median"), r.Minutes, func(m *Minute) float64 { return minutesOf(m.ETAShownP50) })
		shown.width = 1.5
		if one {
			shown.dash = runDashes[1]
		}
		c.series = append(c.series, real, shown)
		e := &r.Summary.ETA
		words = append(words, fmt.Sprintf("%s: off by %s (median) and %s (90th percentile), bias %s; %s shown “estimating”",
			r.Label, shareOr(e.ErrorP50), shareOr(e.ErrorP90), shareOr(e.BiasP50), formatCount(float64(e.Unknown))))
	}
	c.clip()
	c.desc = "For the visitors shown a number on arrival who got in, by minute of arrival: the median ETA the page showed, and the median wait they had. " + strings.Join(words, ". ") + "."
	out = append(out, c)

	c = chart{id: "eta-error", title: "How far off the ETA was", xLabel: xLabel, yLabel: "Error, share of the real wait", xMax: arrivalsMax, yFmt: formatPercent}
	for i, r := range rep.Results {
		p50 := rep.line(i, label(one, r.Label, "median"), r.Minutes, func(m *Minute) float64 { return floatOf(m.ETAErrorP50) })
		p90 := rep.line(i, label(one, r.Label, "90th percentile"), r.Minutes, func(m *Minute) float64 { return floatOf(m.ETAErrorP90) })
		p90.width = 1.5
		if one {
			p90.dash = runDashes[1]
		}
		c.series = append(c.series, p50, p90)
	}
	c.clip()
	c.desc = "The size of the ETA's error, |shown − real| ÷ real (against a floor of a minute), by minute of arrival: its median and 90th percentile. " + strings.Join(words, ". ") + "."
	out = append(out, c)

	if !rep.any(func(s *Summary) bool { return s.Shop != nil }) {
		return out
	}
	c = chart{id: "capacity", title: "The capacity in force", xLabel: xLabel, yLabel: "Capacity", xMax: xMax}
	words = words[:0]
	for i, r := range rep.Results {
		c.series = append(c.series, rep.line(i, r.Label, r.Minutes, func(m *Minute) float64 { return float64(m.Capacity) }))
		if sh := r.Summary.Shop; sh != nil {
			words = append(words, fmt.Sprintf("%s: from %s to %s, %s at the end", r.Label, formatCount(float64(sh.CapacityMin)), formatCount(float64(sh.CapacityMax)), formatCount(float64(sh.CapacityLast))))
		}
	}
	c.desc = "The capacity in force at the end of each minute: adapt's, where it is on. " + strings.Join(words, ". ") + "."
	out = append(out, c)

	c = chart{id: "shop", title: "The shop's p90 against the target", xLabel: xLabel, yLabel: "Time to first byte, p90 (seconds)", xMax: xMax}
	words = words[:0]
	var target *series
	for i, r := range rep.Results {
		c.series = append(c.series, rep.line(i, label(one, r.Label, "p90"), r.Minutes, func(m *Minute) float64 { return floatOf((*float64)(m.ShopP90)) }))
		sh := r.Summary.Shop
		if sh == nil {
			continue
		}
		w := fmt.Sprintf("%s: p90 %s over the sale", r.Label, formatSeconds(sh.P90))
		if sh.Target != nil {
			w += fmt.Sprintf(", over the target of %s in %d minutes", formatSeconds(*sh.Target), sh.MinutesOverTarget)
			if target == nil {
				t := rep.line(i, "target", r.Minutes, func(m *Minute) float64 { return floatOf((*float64)(m.Target)) })
				t.color, t.dash, t.width = "#595959", "6 3", 1.5
				target = &t
			}
		}
		words = append(words, w)
	}
	if target != nil {
		c.series = append(c.series, *target)
	}
	c.desc = "The 90th percentile of the shop's time to first byte in each minute, as the room measured it. " + strings.Join(words, ". ") + "."
	return append(out, c)
}

// clip ends the chart's series at its last minute.
func (c *chart) clip() {
	n := int(c.xMax) + 1
	for i := range c.series {
		c.series[i].ys = c.series[i].ys[:min(n, len(c.series[i].ys))]
	}
}

// line is run i's series of f over its minutes, in the run's colour and dash.
func (rep *Report) line(i int, name string, ms []Minute, f func(m *Minute) float64) series {
	s := series{label: name, color: runColors[i%len(runColors)], dash: runDashes[i%len(runDashes)], ys: make([]float64, len(ms))}
	for j := range ms {
		s.ys[j] = f(&ms[j])
	}
	return s
}

// label names a series: by what it is alone, or by its run and what it is.
func label(one bool, run, what string) string {
	if one {
		return what
	}
	return run + ", " + what
}

func minutesOf(s *Seconds) float64 {
	if s == nil {
		return math.NaN()
	}
	return float64(*s) / 60
}

func floatOf(f *float64) float64 {
	if f == nil {
		return math.NaN()
	}
	return *f
}
