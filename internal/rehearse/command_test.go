package rehearse

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/capacity"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
)

// Each run is named by what it runs with, so a chart's key reads as the settings.
func TestRunsAreNamedByTheirSettings(t *testing.T) {
	cfg := configFor(400)
	if got := describe(&cfg); got != "capacity 400" {
		t.Errorf("describe: %q", got)
	}
	cfg.Rate = settings.Rate{Count: 1000, Per: time.Minute}
	cfg.Mode = "random"
	cfg.Events = make([]settings.Event, 2)
	cfg.Adapt = &capacity.Targets{Latency: 800 * time.Millisecond}
	if got, want := describe(&cfg), "capacity 400, rate 1,000 per 1 min, mode random, 2 events, adapt to 800ms"; got != want {
		t.Errorf("describe: %q, want %q", got, want)
	}
	for body, want := range map[string]string{
		`{"capacity": 800}`:                                           "capacity 800",
		`{"mode": "random", "capacity": 800}`:                         "mode random, capacity 800",
		`{"rate": {"count": 1000, "per": "1m"}}`:                      "rate (count 1000, per 1m)",
		`{"adapt": {"latency": "400ms", "max": 3000}, "capacity": 9}`: "adapt (latency 400ms, max 3000), capacity 9",
		`{"session_ttl": null}`:                                       "session_ttl as configured",
		` capacity=400 `:                                              "capacity=400",
		`{}`:                                                          "{}",
		`{"message": "we open at ten", "arrive_ttl": 0}`:              "message we open at ten, arrive_ttl 0",
		`{"capacity": 800`:                                            `{"capacity": 800`,
	} {
		if got := patchLabel([]byte(body)); got != want {
			t.Errorf("patchLabel(%s) = %q, want %q", body, got, want)
		}
	}
}

// The sale file is read first, and each flag given replaces its setting.
func TestSaleFromTheFileAndTheFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "drop.sale")
	if err := os.WriteFile(path, []byte("arrivals 100 over 1m\nstay 2m\ncheckout 50%\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	flags := map[string]string{"stay": "3m ± 1m", "give-up": "10% after 5m"}
	s, err := SaleFrom(path, func(name string) (string, bool) { v, ok := flags[name]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if s.Visitors() != 100 || s.Stay != (Spread{3 * time.Minute, time.Minute}) || s.Checkout != 0.5 || len(s.GiveUp) != 1 {
		t.Fatalf("the file's sale with the flags over it: %+v", s)
	}
	if _, err := SaleFrom("", func(string) (string, bool) { return "", false }); err != nil {
		t.Fatalf("no file and no flag is an empty sale, refused later: %v", err)
	}
}

// The progress bar follows the run furthest behind, and says how many are still in
// line once every arrival is in; it is drawn only on a terminal.
func TestProgressLine(t *testing.T) {
	p := Progress{Label: "capacity 400", Simulated: 71 * time.Minute, Arrived: 1000, Visitors: 2000, InLine: 182034, LastArrival: 2 * time.Hour}
	if got, want := progressLine(p, 1), "rehearsing capacity 400  [██████████████··········]  59 %  1 h 11 min of 2 h, 182,034 in line"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	p.Arrived, p.Simulated, p.InLine = 2000, 150*time.Minute, 12345
	if got, want := progressLine(p, 3), "rehearsing 3 settings  clearing: 12,345 in line, 2 h 30 min simulated"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	var drawn bytes.Buffer
	bar := &progressBar{w: &drawn, runs: make([]Progress, 2)}
	bar.update(Progress{Run: 1, Simulated: 10 * time.Minute, Arrived: 100, Visitors: 2000, LastArrival: time.Hour})
	bar.end()
	if want := "\rrehearsing 2 settings  [························]   0 %  0 s of 1 h, 0 in line"; !strings.HasPrefix(drawn.String(), want) {
		t.Errorf("a run not started yet is the one furthest behind: %q", drawn.String())
	}
	if newProgressBar(&bytes.Buffer{}, 1) != nil {
		t.Error("a progress bar drawn into a buffer")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if newProgressBar(f, 1) != nil {
		t.Error("a progress bar drawn into a file")
	}
}

// A command's run writes the report and says where it is; a compared setting the
// room refuses is said before anything is played, with the admin API's message.
func TestCommandRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "report")
	c := Command{Room: configFor(50), Compare: []string{`{"capacity": 100}`}, Seed: 3, Out: out,
		Sale: Sale{Arrivals: []Segment{{N: 500, Over: time.Minute}}, Stay: Spread{Base: time.Minute}}}
	var b bytes.Buffer
	if err := c.Run(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"500 visitors over 1 min (seed 3)", "as configured (capacity 50)", "capacity 100", "The report: " + filepath.Join(out, "report.html")} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the summary says no %q:\n%s", want, b.String())
		}
	}
	c.Compare = []string{`{"capacity": 100}`, `{"mode": "lottery"}`}
	err := c.Run(context.Background(), &b)
	if err == nil || !strings.HasPrefix(err.Error(), `--compare {"mode": "lottery"}: mode must be`) {
		t.Fatalf("a mode the room does not have: %v", err)
	}
}
