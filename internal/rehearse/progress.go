package rehearse

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progressBar is the terminal's one line of how far a rehearsal has got, rewritten
// in place: the run furthest behind, as a bar over the arrivals, and once they are
// all in, how many are still in line.
type progressBar struct {
	w     io.Writer
	mu    sync.Mutex
	runs  []Progress
	drawn int // the width of the line drawn
}

// newProgressBar is a bar drawn on w for runs runs; nil when w is not a terminal
// (a file, a pipe, a test's buffer), where a line rewritten in place is noise.
func newProgressBar(w io.Writer, runs int) *progressBar {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return &progressBar{w: w, runs: make([]Progress, runs)}
}

// update is told of one run's progress, from its goroutine.
func (b *progressBar) update(p Progress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runs[p.Run] = p
	slowest := p
	for _, r := range b.runs {
		if r.Visitors == 0 { // not started: at the start of the same sale
			r = Progress{Visitors: p.Visitors, LastArrival: p.LastArrival, Limit: p.Limit}
		}
		if r.Simulated < slowest.Simulated || r.Simulated == slowest.Simulated && r.Arrived < slowest.Arrived {
			slowest = r
		}
	}
	line := progressLine(slowest, len(b.runs))
	pad := max(0, b.drawn-len([]rune(line)))
	b.drawn = len([]rune(line))
	fmt.Fprintf(b.w, "\r%s%s", line, strings.Repeat(" ", pad))
}

// end clears the line, so that what follows starts on a clean one.
func (b *progressBar) end() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.drawn > 0 {
		fmt.Fprintf(b.w, "\r%s\r", strings.Repeat(" ", b.drawn))
	}
}

// progressLine is the bar's text for run p, of runs.
func progressLine(p Progress, runs int) string {
	what := "rehearsing " + p.Label
	if runs > 1 {
		what = fmt.Sprintf("rehearsing %d settings", runs)
	}
	inLine := formatCount(float64(p.InLine)) + " in line"
	if p.Arrived >= p.Visitors {
		return fmt.Sprintf("%s  clearing: %s, %s simulated", what, inLine, formatDuration(p.Simulated))
	}
	const width = 24
	done := min(1, float64(p.Simulated)/float64(max(p.LastArrival, time.Second)))
	full := int(done * width)
	return fmt.Sprintf("%s  [%s%s] %3.0f %%  %s of %s, %s", what, strings.Repeat("█", full), strings.Repeat("·", width-full),
		100*done, formatDuration(p.Simulated), formatDuration(p.LastArrival), inLine)
}
