package rehearse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Report is a rehearsal's outcome as it is written: report.json, report.html, and
// the terminal's summary. The first result is the room as configured; the others
// are the settings it was compared with.
type Report struct {
	Seed    uint64
	Sale    Sale
	Results []*Result
}

// reportJSON is report.json: the first run's summary at the top, under the names
// scripts rely on, its minutes, and the runs it was compared with.
type reportJSON struct {
	Summary
	Label   string    `json:"label"`
	Seed    uint64    `json:"seed"`
	Sale    saleJSON  `json:"sale"`
	Minutes []Minute  `json:"per_minute"`
	Compare []*Result `json:"compare,omitempty"`
}

type saleJSON struct {
	Visitors int     `json:"visitors"`
	Length   Seconds `json:"arrivals_over_seconds"`
}

// JSON is report.json.
func (rep *Report) JSON() ([]byte, error) {
	if len(rep.Results) == 0 {
		return nil, fmt.Errorf("no result to report")
	}
	first := rep.Results[0]
	out := reportJSON{Summary: first.Summary, Label: first.Label, Seed: rep.Seed, Minutes: first.Minutes,
		Compare: rep.Results[1:], Sale: saleJSON{Visitors: rep.Sale.Visitors(), Length: secondsOf(rep.Sale.Length())}}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Write writes report.json and report.html into dir, made if need be, and returns
// their paths.
func (rep *Report) Write(dir string) (jsonPath, htmlPath string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("writing the report into %s: %w", dir, err)
	}
	js, err := rep.JSON()
	if err != nil {
		return "", "", err
	}
	jsonPath, htmlPath = filepath.Join(dir, "report.json"), filepath.Join(dir, "report.html")
	if err := os.WriteFile(jsonPath, js, 0o644); err != nil {
		return "", "", fmt.Errorf("writing the report into %s: %w", dir, err)
	}
	if err := os.WriteFile(htmlPath, rep.HTML(), 0o644); err != nil {
		return "", "", fmt.Errorf("writing the report into %s: %w", dir, err)
	}
	return jsonPath, htmlPath, nil
}

// Text is the terminal's summary: a few lines a run.
func (rep *Report) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s visitors over %s (seed %d)\n", formatCount(float64(rep.Sale.Visitors())), formatDuration(rep.Sale.Length()), rep.Seed)
	for _, r := range rep.Results {
		s := &r.Summary
		fmt.Fprintf(&b, "\n%s\n", r.Label)
		fmt.Fprintf(&b, "  admitted %s, gave up %s, no-shows %s", formatCount(float64(s.Admitted)), formatCount(float64(s.GaveUp)), formatCount(float64(s.NoShows)))
		if s.TurnedAway > 0 {
			fmt.Fprintf(&b, ", turned away %s", formatCount(float64(s.TurnedAway)))
		}
		b.WriteString("\n")
		fmt.Fprintf(&b, "  wait: median %s, 90th percentile %s, longest %s\n", formatSeconds(s.WaitP50), formatSeconds(s.WaitP90), formatSeconds(s.WaitMax))
		fmt.Fprintf(&b, "  the line %s; at most %s waiting\n", clearsText(s), formatCount(float64(s.MaxWaiting)))
		if s.ETA.ErrorP50 != nil {
			fmt.Fprintf(&b, "  the ETA shown on arrival was off by %s (median), %s (90th percentile)\n", formatShare(*s.ETA.ErrorP50), formatShare(*s.ETA.ErrorP90))
		}
		if sh := s.Shop; sh != nil {
			fmt.Fprintf(&b, "  the shop's p90 %s", formatSeconds(sh.P90))
			if sh.Target != nil {
				fmt.Fprintf(&b, " (target %s, over it in %d minutes); capacity %d to %d, last %d", formatSeconds(*sh.Target), sh.MinutesOverTarget, sh.CapacityMin, sh.CapacityMax, sh.CapacityLast)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// clearsText says when the line clears: "clears 12 min after the first arrival",
// or "does not clear within the rehearsal (…)".
func clearsText(s *Summary) string {
	if s.ClearsAfter == nil {
		return fmt.Sprintf("does not clear within the rehearsal (%s still in line)", formatCount(float64(s.InLine)))
	}
	return "clears " + formatSeconds(*s.ClearsAfter) + " after the first arrival"
}

// formatSeconds writes a wait as people say it: 45 s, 12 min 5 s, 1 h 35 min; and
// a shop's time to the millisecond: 420 ms, 1.25 s.
func formatSeconds(s Seconds) string {
	switch f := float64(s); {
	case f > 0 && f < 1:
		return strconv.FormatFloat(math.Round(f*1000), 'f', -1, 64) + " ms"
	case f > 0 && f < 10 && f != math.Trunc(f):
		return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64) + " s"
	}
	return formatDuration(time.Duration(float64(s) * float64(time.Second)))
}

func formatDuration(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	switch {
	case h > 0 && m > 0:
		return fmt.Sprintf("%d h %d min", h, m)
	case h > 0:
		return fmt.Sprintf("%d h", h)
	case m > 0 && s > 0:
		return fmt.Sprintf("%d min %d s", m, s)
	case m > 0:
		return fmt.Sprintf("%d min", m)
	}
	return fmt.Sprintf("%d s", s)
}

func formatShare(f float64) string {
	return fmt.Sprintf("%s%%", formatCount(math.Round(f*1000)/10))
}
