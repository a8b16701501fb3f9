package rehearse

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// The HTML report: one self-contained page, its style inline and its charts inline
// SVG, no script and nothing fetched, so it opens from a file, offline, and the
// same seed gives the same bytes. Each chart is a figure with a title, a
// description in words, labelled axes and a key, and the numbers it draws are in
// a table beside it.

const reportStyle = `:root{color-scheme:light}
body{margin:0;background:#fff;color:#1a1a1a;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
main{max-width:820px;margin:0 auto;padding:24px 16px 64px}
h1{font-size:1.6rem;margin:0 0 .5rem}h2{font-size:1.25rem;margin:2.5rem 0 .5rem}
a{color:#0b5fa5}a:focus-visible,summary:focus-visible{outline:3px solid #0b5fa5;outline-offset:2px}
.lead{color:#3d3d3d}
table{border-collapse:collapse;font-variant-numeric:tabular-nums;margin:.5rem 0}
th,td{padding:4px 10px;border-bottom:1px solid #c8c8c8;text-align:right}
th[scope=row],thead th:first-child{text-align:left}
caption{text-align:left;font-weight:600;padding:4px 0}
figure{margin:0}figcaption{color:#3d3d3d;margin-top:.25rem}
svg{max-width:100%;height:auto}
svg text{fill:#1a1a1a;font:12px system-ui,sans-serif}svg text.label{font-size:13px}
svg .grid line{stroke:#dcdcdc;stroke-width:1}svg .axis line{stroke:#4a4a4a;stroke-width:1}
svg .mark{stroke-width:2}
.legend{list-style:none;padding:0;margin:.25rem 0;display:flex;flex-wrap:wrap;gap:4px 18px}
.legend li{display:flex;align-items:center;gap:6px}
details{margin:.5rem 0}summary{cursor:pointer;color:#0b5fa5}
.scroll{max-height:24rem;overflow:auto;border:1px solid #c8c8c8}
.note{color:#3d3d3d;font-size:.95rem}
`

// HTML is report.html.
func (rep *Report) HTML() []byte {
	var b strings.Builder
	first := rep.Results[0]
	title := "Rehearsal of the sale"
	if len(rep.Results) > 1 {
		title = "Rehearsal of the sale: " + fmt.Sprint(len(rep.Results)) + " settings compared"
	}
	fmt.Fprintf(&b, "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>%s</title>\n<style>\n%s</style>\n</head>\n<body>\n<main>\n",
		html.EscapeString(title), reportStyle)
	fmt.Fprintf(&b, "<h1>%s</h1>\n", html.EscapeString(title))
	fmt.Fprintf(&b, "<p class=\"lead\">%s visitors arriving over %s, played against the room's real engine on a simulated clock (seed %d). ",
		formatCount(float64(rep.Sale.Visitors())), formatDuration(rep.Sale.Length()), rep.Seed)
	if len(rep.Results) == 1 {
		fmt.Fprintf(&b, "The room: %s.</p>\n", html.EscapeString(first.Label))
	} else {
		b.WriteString("Every setting plays the same people, arriving at the same times and doing the same things.</p>\n")
	}

	charts := rep.charts()
	b.WriteString("<nav aria-label=\"The report's parts\"><ul>\n<li><a href=\"#figures\">In figures</a></li>\n")
	for _, c := range charts {
		fmt.Fprintf(&b, "<li><a href=\"#%s\">%s</a></li>\n", c.id, html.EscapeString(c.title))
	}
	b.WriteString("<li><a href=\"#minutes\">Minute by minute</a></li>\n</ul></nav>\n")

	rep.figuresTable(&b)
	for _, c := range charts {
		fmt.Fprintf(&b, "<section aria-labelledby=\"%s-h\">\n<h2 id=\"%s\"><span id=\"%s-h\">%s</span></h2>\n<figure>\n", c.id, c.id, c.id, html.EscapeString(c.title))
		b.WriteString(c.svg())
		b.WriteString("\n")
		b.WriteString(c.legend())
		fmt.Fprintf(&b, "\n<figcaption>%s</figcaption>\n</figure>\n", html.EscapeString(c.desc))
		dataTable(&b, &c)
		b.WriteString("</section>\n")
	}
	rep.minutesTables(&b)
	b.WriteString("</main>\n</body>\n</html>\n")
	return []byte(b.String())
}

// figuresTable is the summary, a column a run.
func (rep *Report) figuresTable(b *strings.Builder) {
	b.WriteString("<section aria-labelledby=\"figures\">\n<h2 id=\"figures\">In figures</h2>\n<table>\n<thead><tr><th scope=\"col\">Figure</th>")
	for _, r := range rep.Results {
		fmt.Fprintf(b, "<th scope=\"col\">%s</th>", html.EscapeString(r.Label))
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	row := func(name string, cell func(s *Summary) string) {
		fmt.Fprintf(b, "<tr><th scope=\"row\">%s</th>", html.EscapeString(name))
		for _, r := range rep.Results {
			fmt.Fprintf(b, "<td>%s</td>", html.EscapeString(cell(&r.Summary)))
		}
		b.WriteString("</tr>\n")
	}
	count := func(n int) string { return formatCount(float64(n)) }
	row("Visitors", func(s *Summary) string { return count(s.Visitors) })
	row("Admitted", func(s *Summary) string { return count(s.Admitted) })
	row("of whom at once, with no line", func(s *Summary) string { return count(s.AdmittedAtOnce) })
	row("Gave up waiting", func(s *Summary) string { return count(s.GaveUp) })
	row("Never came when their turn did", func(s *Summary) string { return count(s.NoShows) })
	if rep.any(func(s *Summary) bool { return s.TurnedAway > 0 }) {
		row("Turned away", func(s *Summary) string { return count(s.TurnedAway) })
	}
	row("The line clears", func(s *Summary) string {
		if s.ClearsAfter == nil {
			return "not within the rehearsal"
		}
		return "after " + formatSeconds(*s.ClearsAfter)
	})
	row("Wait, median", func(s *Summary) string { return formatSeconds(s.WaitP50) })
	row("Wait, 90th percentile", func(s *Summary) string { return formatSeconds(s.WaitP90) })
	row("Longest wait", func(s *Summary) string { return formatSeconds(s.WaitMax) })
	row("Most people waiting", func(s *Summary) string { return count(s.MaxWaiting) })
	row("ETA shown on arrival: error, median", func(s *Summary) string { return shareOr(s.ETA.ErrorP50) })
	row("ETA shown on arrival: error, 90th percentile", func(s *Summary) string { return shareOr(s.ETA.ErrorP90) })
	row("ETA shown on arrival: bias, median", func(s *Summary) string { return shareOr(s.ETA.BiasP50) })
	row("Shown “estimating” on arrival", func(s *Summary) string { return count(s.ETA.Unknown) })
	if rep.any(func(s *Summary) bool { return s.Shop != nil }) {
		row("The shop's p90", func(s *Summary) string {
			if s.Shop == nil {
				return "–"
			}
			return formatSeconds(s.Shop.P90)
		})
		row("Capacity, lowest to highest", func(s *Summary) string {
			if s.Shop == nil {
				return "–"
			}
			return fmt.Sprintf("%s to %s", count(s.Shop.CapacityMin), count(s.Shop.CapacityMax))
		})
	}
	b.WriteString("</tbody>\n</table>\n<p class=\"note\">A wait is from a visitor's first request to their entry into the shop. The ETA's error is (shown − real) ÷ the real wait, against a floor of a minute, for the visitors shown a number on arrival who got in; a positive bias means the page promised longer than it took.</p>\n</section>\n")
}

func (rep *Report) any(f func(s *Summary) bool) bool {
	for _, r := range rep.Results {
		if f(&r.Summary) {
			return true
		}
	}
	return false
}

func shareOr(f *float64) string {
	if f == nil {
		return "–"
	}
	return formatShare(*f)
}

// dataTable is the chart's numbers as a table, folded away.
func dataTable(b *strings.Builder, c *chart) {
	rows := 0
	for _, s := range c.series {
		rows = max(rows, len(s.ys))
	}
	fmt.Fprintf(b, "<details>\n<summary>The chart's numbers</summary>\n<div class=\"scroll\" tabindex=\"0\" role=\"region\" aria-label=\"%s: the numbers\">\n<table>\n<caption>%s</caption>\n<thead><tr><th scope=\"col\">%s</th>",
		html.EscapeString(c.title), html.EscapeString(c.title), html.EscapeString(c.xLabel))
	for _, s := range c.series {
		fmt.Fprintf(b, "<th scope=\"col\">%s</th>", html.EscapeString(s.label))
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for i := range rows {
		fmt.Fprintf(b, "<tr><th scope=\"row\">%d</th>", i)
		for _, s := range c.series {
			cell := "–"
			if i < len(s.ys) && !math.IsNaN(s.ys[i]) {
				cell = c.yFmtOrCount()(math.Round(s.ys[i]*100) / 100)
			}
			fmt.Fprintf(b, "<td>%s</td>", cell)
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody>\n</table>\n</div>\n</details>\n")
}

func (c *chart) yFmtOrCount() func(float64) string {
	if c.yFmt != nil {
		return c.yFmt
	}
	return formatCount
}

// minutesTables is every run's minutes, all the counters, folded away.
func (rep *Report) minutesTables(b *strings.Builder) {
	b.WriteString("<section aria-labelledby=\"minutes\">\n<h2 id=\"minutes\">Minute by minute</h2>\n<p class=\"note\">Everything the charts draw, and more, is in report.json beside this page.</p>\n")
	for _, r := range rep.Results {
		fmt.Fprintf(b, "<details>\n<summary>%s</summary>\n<div class=\"scroll\" tabindex=\"0\" role=\"region\" aria-label=\"%s, minute by minute\">\n<table>\n<caption>%s, minute by minute</caption>\n",
			html.EscapeString(r.Label), html.EscapeString(r.Label), html.EscapeString(r.Label))
		b.WriteString("<thead><tr><th scope=\"col\">Minute</th><th scope=\"col\">Arrivals</th><th scope=\"col\">Admissions</th><th scope=\"col\">Gave up</th><th scope=\"col\">No-shows</th><th scope=\"col\">Waiting</th><th scope=\"col\">Inside</th><th scope=\"col\">Capacity</th><th scope=\"col\">Wait, median (s)</th><th scope=\"col\">Wait, p90 (s)</th></tr></thead>\n<tbody>\n")
		for _, m := range r.Minutes {
			fmt.Fprintf(b, "<tr><th scope=\"row\">%d</th><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td></tr>\n",
				m.Minute, m.Arrivals, m.Admissions, m.GaveUp, m.NoShows, m.Waiting, m.Active, m.Capacity, secondsCell(m.WaitP50), secondsCell(m.WaitP90))
		}
		b.WriteString("</tbody>\n</table>\n</div>\n</details>\n")
	}
	b.WriteString("</section>\n")
}

func secondsCell(s *Seconds) string {
	if s == nil {
		return "–"
	}
	return formatCount(math.Round(float64(*s)))
}
