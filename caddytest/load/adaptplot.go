package main

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// writeAdaptPlot draws the adapt section's runs as an SVG of two charts over the
// run's time: the capacity in force of each run, beside the shop's limit scaled to
// the capacity it serves at the target; and the shop's p90 in each second, beside
// the target. A few lines of SVG by hand: no plotting library is worth a dependency
// of the test module for one picture.
func writeAdaptPlot(file string, runs []*adaptRun, phase time.Duration) error {
	const (
		w, h       = 880, 520
		left, top  = 60, 30
		plotW      = w - left - 30
		plotH      = 180
		gap        = 70
		secondTop  = top + plotH + gap
		capacityTo = 5 * adaptRight
	)
	total := 3 * phase
	colors := []string{"#d1495b", "#edae49", "#00798c"}
	x := func(at time.Duration) float64 { return left + float64(plotW)*at.Seconds()/total.Seconds() }
	yCap := func(c int) float64 { return top + plotH - float64(plotH)*float64(min(c, capacityTo))/capacityTo }
	p90To := 4 * adaptTarget
	yP90 := func(d time.Duration) float64 {
		return secondTop + plotH - float64(plotH)*float64(min(d, p90To))/float64(p90To)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	axes := func(y0 int, title, yLabel string, ticks []string) {
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", left, y0-10, title)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", left, y0, plotW, plotH)
		for i, t := range ticks {
			y := float64(y0+plotH) - float64(plotH)*float64(i)/float64(len(ticks)-1)
			fmt.Fprintf(&b, `<text x="%d" y="%.0f" text-anchor="end">%s</text>`+"\n", left-6, y+4, t)
		}
		fmt.Fprintf(&b, `<text x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">%s</text>`+"\n", y0+plotH/2, y0+plotH/2, yLabel)
		for s := time.Duration(0); s <= total; s += phase / 3 {
			fmt.Fprintf(&b, `<text x="%.0f" y="%d" text-anchor="middle">%.0fs</text>`+"\n", x(s), y0+plotH+16, s.Seconds())
		}
		for _, at := range []time.Duration{phase, 2 * phase} {
			fmt.Fprintf(&b, `<line x1="%.0f" y1="%d" x2="%.0f" y2="%d" stroke="#bbb" stroke-dasharray="3 3"/>`+"\n", x(at), y0, x(at), y0+plotH)
		}
	}
	axes(top, "Capacity in force (the shop's limit halves at "+phase.String()+" and comes back at "+(2*phase).String()+")", "visitors",
		[]string{"0", fmt.Sprint(capacityTo / 2), fmt.Sprint(capacityTo)})
	axes(secondTop, "The shop's p90 time to first byte, each second", "p90",
		[]string{"0", (p90To / 2).String(), p90To.String()})
	// The shop's right capacity: what it serves at the target, in proportion to its limit.
	right := []string{}
	for _, p := range []struct{ from, to time.Duration }{{0, phase}, {phase, 2 * phase}, {2 * phase, total}} {
		c := adaptRight
		if p.from == phase {
			c = adaptRight / 2
		}
		right = append(right, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", x(p.from), yCap(c), x(p.to), yCap(c)))
	}
	fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="#888" stroke-width="6" stroke-opacity="0.3"/>`+"\n", strings.Join(right, " "))
	fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#888" stroke-dasharray="6 4"/>`+"\n", left, yP90(adaptTarget), left+plotW, yP90(adaptTarget))
	fmt.Fprintf(&b, `<text x="%d" y="%.1f" fill="#666">target %v</text>`+"\n", left+plotW-80, yP90(adaptTarget)-4, adaptTarget)
	for i, run := range runs {
		run.mu.Lock()
		var caps, p90s []string
		for _, p := range run.timeline {
			caps = append(caps, fmt.Sprintf("%.1f,%.1f", x(p.at), yCap(p.capacity)))
			if p.p90 > 0 {
				p90s = append(p90s, fmt.Sprintf("%.1f,%.1f", x(p.at), yP90(p.p90)))
			}
		}
		run.mu.Unlock()
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(caps, " "), colors[i%len(colors)])
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", strings.Join(p90s, " "), colors[i%len(colors)])
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			left+i*215, h-18, colors[i%len(colors)], left+18+i*215, h-8, run.name)
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="#888" fill-opacity="0.3"/><text x="%d" y="%d">the shop's right capacity</text>`+"\n",
		left+3*200-60, h-18, left+3*200-42, h-8)
	b.WriteString("</svg>\n")
	return os.WriteFile(file, []byte(b.String()), 0o644)
}
