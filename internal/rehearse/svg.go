package rehearse

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// The report's charts are line charts drawn here as inline SVG: the report must
// open with no network and no script, and be the same bytes for the same seed.
// Go has no well-kept SVG charting library that draws without a script and gives
// an accessible figure (a title, a description, labelled axes); a line chart is
// a couple of hundred lines of our own.

// chart is one line chart: x in minutes, one or more series.
type chart struct {
	id     string // unique in the page
	title  string
	desc   string // the text alternative: what the chart shows, in words
	xLabel string
	yLabel string
	xMax   float64
	series []series
	marks  []mark  // vertical markers (the line clears)
	yMax   float64 // at least this (0: from the data)
	yFmt   func(float64) string
}

// series is one line; NaN is a gap.
type series struct {
	label string
	ys    []float64 // at x = 0, 1, 2, … (minutes)
	color string
	dash  string // "" solid
	width float64
}

// mark is a vertical line at x, labelled.
type mark struct {
	x     float64
	label string
	color string
	dash  string
}

// The palette: each has a contrast of at least 4.5:1 on white, so a line is
// visible to everyone (WCAG 1.4.11 asks 3:1), and each run also has a dash
// pattern of its own, so no line is told from another by its colour alone.
var (
	runColors = []string{"#0b5fa5", "#b3471b", "#1b7a4a", "#7a3f9d", "#7a6200", "#3d3d3d"}
	runDashes = []string{"", "9 4", "3 3", "12 4 3 4", "6 2", "1 3"}
)

const (
	chartW, chartH             = 760.0, 300.0
	padL, padR, padTop, padBot = 72.0, 20.0, 14.0, 50.0
)

func (c *chart) svg() string {
	var b strings.Builder
	plotW, plotH := chartW-padL-padR, chartH-padTop-padBot
	yTop := c.yMax
	for _, s := range c.series {
		for _, y := range s.ys {
			if !math.IsNaN(y) {
				yTop = max(yTop, y)
			}
		}
	}
	yTicks := niceTicks(yTop)
	yTop = yTicks[len(yTicks)-1]
	xTicks := niceTicks(max(c.xMax, 1))
	xTop := xTicks[len(xTicks)-1]
	px := func(x float64) float64 { return padL + x/xTop*plotW }
	py := func(y float64) float64 { return padTop + plotH - y/yTop*plotH }
	yFmt := c.yFmt
	if yFmt == nil {
		yFmt = formatCount
	}

	fmt.Fprintf(&b, `<svg role="img" aria-labelledby="%[1]s-t %[1]s-d" viewBox="0 0 %[2]g %[3]g" width="%[2]g" height="%[3]g" xmlns="http://www.w3.org/2000/svg">`, c.id, chartW, chartH)
	fmt.Fprintf(&b, `<title id="%s-t">%s</title><desc id="%s-d">%s</desc>`, c.id, html.EscapeString(c.title), c.id, html.EscapeString(c.desc))
	b.WriteString(`<g class="grid" aria-hidden="true">`)
	for _, t := range yTicks {
		fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="%s" y2="%s"/>`, num(padL), num(padL+plotW), num(py(t)), num(py(t)))
	}
	b.WriteString(`</g><g class="axis" aria-hidden="true">`)
	fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="%s" y2="%s"/>`, num(padL), num(padL+plotW), num(py(0)), num(py(0)))
	fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="%s" y2="%s"/>`, num(padL), num(padL), num(padTop), num(py(0)))
	for _, t := range yTicks {
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end">%s</text>`, num(padL-6), num(py(t)+4), yFmt(t))
	}
	for _, t := range xTicks {
		fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="%s" y2="%s"/>`, num(px(t)), num(px(t)), num(py(0)), num(py(0)+5))
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`, num(px(t)), num(py(0)+19), formatCount(t))
	}
	fmt.Fprintf(&b, `<text class="label" x="%s" y="%s" text-anchor="middle">%s</text>`, num(padL+plotW/2), num(chartH-8), html.EscapeString(c.xLabel))
	fmt.Fprintf(&b, `<text class="label" transform="translate(16 %s) rotate(-90)" text-anchor="middle">%s</text>`, num(padTop+plotH/2), html.EscapeString(c.yLabel))
	b.WriteString(`</g>`)
	for _, m := range c.marks {
		fmt.Fprintf(&b, `<line class="mark" x1="%s" x2="%s" y1="%s" y2="%s" stroke="%s"%s/>`, num(px(m.x)), num(px(m.x)), num(padTop), num(py(0)), m.color, dashAttr(m.dash))
	}
	b.WriteString(`<g fill="none" stroke-linejoin="round" stroke-linecap="butt">`)
	for _, s := range c.series {
		d := pathOf(s.ys, px, py)
		if d == "" {
			continue
		}
		w := s.width
		if w == 0 {
			w = 2.5
		}
		fmt.Fprintf(&b, `<path d="%s" stroke="%s" stroke-width="%s"%s><title>%s</title></path>`, d, s.color, num(w), dashAttr(s.dash), html.EscapeString(s.label))
	}
	b.WriteString(`</g></svg>`)
	return b.String()
}

// legend is the chart's key, as HTML beside the figure: each line's swatch, with
// its dash, and its label.
func (c *chart) legend() string {
	var b strings.Builder
	b.WriteString(`<ul class="legend">`)
	for _, s := range c.series {
		w := s.width
		if w == 0 {
			w = 2.5
		}
		fmt.Fprintf(&b, `<li><svg aria-hidden="true" width="36" height="10" viewBox="0 0 36 10"><line x1="0" x2="36" y1="5" y2="5" stroke="%s" stroke-width="%s"%s/></svg>%s</li>`,
			s.color, num(w), dashAttr(s.dash), html.EscapeString(s.label))
	}
	for _, m := range c.marks {
		fmt.Fprintf(&b, `<li><svg aria-hidden="true" width="36" height="10" viewBox="0 0 36 10"><line x1="18" x2="18" y1="0" y2="10" stroke="%s" stroke-width="2"%s/></svg>%s</li>`,
			m.color, dashAttr(m.dash), html.EscapeString(m.label))
	}
	b.WriteString(`</ul>`)
	return b.String()
}

func dashAttr(d string) string {
	if d == "" {
		return ""
	}
	return ` stroke-dasharray="` + d + `"`
}

// pathOf is the path through ys at x = 0, 1, 2, …, broken at each NaN; a point
// alone is drawn as a short step, so it shows.
func pathOf(ys []float64, px, py func(float64) float64) string {
	var b strings.Builder
	in := false
	for i, y := range ys {
		if math.IsNaN(y) {
			in = false
			continue
		}
		alone := !in && (i+1 >= len(ys) || math.IsNaN(ys[i+1]))
		switch {
		case alone:
			fmt.Fprintf(&b, "M%s %sH%s", num(px(float64(i))-1.5), num(py(y)), num(px(float64(i))+1.5))
		case in:
			fmt.Fprintf(&b, "L%s %s", num(px(float64(i))), num(py(y)))
		default:
			fmt.Fprintf(&b, "M%s %s", num(px(float64(i))), num(py(y)))
		}
		in = !alone
	}
	return b.String()
}

// niceTicks are the ticks from 0 to at least top, at 1, 2 or 5 times a power of
// ten, four to eight of them.
func niceTicks(top float64) []float64 {
	if top <= 0 || math.IsNaN(top) {
		top = 1
	}
	raw := top / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if step = m * mag; top/step <= 7 {
			break
		}
	}
	var ticks []float64
	for t := 0.0; ; t += step {
		ticks = append(ticks, math.Round(t/step)*step)
		if t >= top-step*1e-9 {
			break
		}
	}
	return ticks
}

// num writes a coordinate to a tenth, the same on every machine.
func num(f float64) string { return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64) }

// formatCount writes a count or a tick as people read it: 12,500; 1.5.
func formatCount(f float64) string {
	if f != math.Trunc(f) {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatInt(int64(f), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// formatPercent writes a share as a percentage tick: 25%.
func formatPercent(f float64) string { return formatCount(math.Round(f*1000)/10) + "%" }
