package caddytest

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/rehearse"
)

// Rehearsed against real: one small sale played twice on the same config, by the
// same people, once by `caddy waiting-room rehearse` and once against a real Caddy
// by clients that follow the schedule in real time, each doing what the waiting
// page and a shopper do. The figures a rehearsal reports must agree with what
// happened, within the noise of the real run, measured by running the real sale
// several times (-rehearse.calibrate, under -race as CI runs it) and kept in
// testdata/rehearse-noise.json.

var rehearseCalibrate = flag.Int("rehearse.calibrate", 0, "play the real sale this many times and rewrite testdata/rehearse-noise.json with the spread of its figures")

// realSale is the sale, as the command's flags: a rush then a tail, short stays,
// half the shoppers checking out, a fifth of those still waiting after 30 s giving
// up. Its line clears in about two and a half minutes.
var realSale = []string{
	"--arrivals", "150 over 20s, 100 over 40s",
	"--stay", "15s ± 5s",
	"--clicks", "every 3s",
	"--checkout", "50%",
	"--give-up", "20% after 30s",
}

const realSaleSeed = 44

// realSaleRoom is the room, with short timings so that the sale is short.
var realSaleRoom = roomBlock("sale", "/shop/*", 30, "memory", "session_ttl 10s", "queue_ttl 10s", "away_ttl 30s", "arrive_ttl 5s")

// saleFigures are what is compared: report.json's names, and the admissions of
// each minute since the first arrival.
type saleFigures struct {
	Visitors   int      `json:"visitors"`
	Admitted   int      `json:"admitted"`
	GaveUp     int      `json:"gave_up"`
	ClearsBy   *float64 `json:"clears_after_seconds"`
	WaitP50    float64  `json:"wait_p50_seconds"`
	WaitP90    float64  `json:"wait_p90_seconds"`
	MaxWaiting int      `json:"max_waiting"`
	Minutes    []struct {
		Admissions int `json:"admissions"`
	} `json:"per_minute"`
}

// named are the figures by name, each with its resolution: the least difference
// the two ways can tell apart (a step of the room for a time, one person for a
// count).
func (f *saleFigures) named() map[string]figure {
	out := map[string]figure{
		"admitted":             {float64(f.Admitted), 1},
		"gave_up":              {float64(f.GaveUp), 1},
		"wait_p50_seconds":     {f.WaitP50, 0.25},
		"wait_p90_seconds":     {f.WaitP90, 0.25},
		"clears_after_seconds": {math.NaN(), 0.25},
	}
	if f.ClearsBy != nil {
		out["clears_after_seconds"] = figure{*f.ClearsBy, 0.25}
	}
	for i, m := range f.Minutes {
		out[fmt.Sprintf("admissions_minute_%d", i)] = figure{float64(m.Admissions), 1}
	}
	return out
}

type figure struct{ value, unit float64 }

// noiseFile is testdata/rehearse-noise.json: the real sale's figures over several
// runs, their spread, and what the rehearsal said of the same sale.
type noiseFile struct {
	Note    string                 `json:"note"`
	Machine string                 `json:"machine"`
	Runs    int                    `json:"runs"`
	Figures map[string]*noiseOfOne `json:"figures"`
}

type noiseOfOne struct {
	Real      []float64 `json:"real"`
	Sigma     float64   `json:"sigma"` // the larger of 1.4826 × MAD and range ÷ 2.33 (a normal sample of five)
	Unit      float64   `json:"unit"`
	Rehearsed float64   `json:"rehearsed"`
	// MeanDiff is the mean of real − rehearsed over the runs: the part of the
	// difference that does not change from run to run, what the real machine's own
	// latencies (a request's way, a timer's lateness) add to each round of the
	// line, which the rehearsal does not model.
	MeanDiff float64 `json:"mean_diff"`
}

// tolerance is how far the rehearsal may be from one real run: three of the real
// run's deviations, the difference that does not change from run to run, and a
// unit of resolution.
func (n *noiseOfOne) tolerance() float64 { return 3*n.Sigma + math.Abs(n.MeanDiff) + n.Unit }

const noisePath = "testdata/rehearse-noise.json"

func TestRehearsedAgainstReal(t *testing.T) {
	people := realSalePeople(t)
	if *rehearseCalibrate > 0 {
		calibrateRealSale(t, people, *rehearseCalibrate)
		return
	}
	raw, err := os.ReadFile(noisePath)
	if err != nil {
		t.Fatalf("%v: run go test -race -run TestRehearsedAgainstReal -rehearse.calibrate 5 . to measure the noise", err)
	}
	var noise noiseFile
	if err := json.Unmarshal(raw, &noise); err != nil {
		t.Fatal(err)
	}
	nd := startFleet(t, 1, func(int) string { return realSaleRoom }).nodes[0]
	rehearsed := rehearseCommand(t, nd)
	real := playRealSale(t, nd, people)
	got, want := real.named(), rehearsed.named()
	for side, figures := range map[string]map[string]figure{"the rehearsal": want, "the real sale": got} {
		for name, f := range figures {
			if noise.Figures[name] == nil && f.value != 0 {
				t.Errorf("%s has %s = %g, which the measured noise does not cover", side, name, f.value)
			}
		}
	}
	t.Logf("%-24s %10s %10s %10s %10s", "figure", "rehearsed", "real", "diff", "tolerance")
	for _, name := range slices.Sorted(maps.Keys(noise.Figures)) {
		n := noise.Figures[name]
		r, w := got[name].value, want[name].value // a minute one side does not have is 0 admissions
		diff := r - w
		t.Logf("%-24s %10.2f %10.2f %+10.2f %10.2f", name, w, r, diff, n.tolerance())
		if math.IsNaN(diff) || math.Abs(diff) > n.tolerance() {
			t.Errorf("%s: rehearsed %.2f, real %.2f: %+.2f is beyond the tolerance of %.2f (3 × σ %.2f + |bias %+.2f| + %g) measured over %d real runs",
				name, w, r, diff, n.tolerance(), n.Sigma, n.MeanDiff, n.Unit, noise.Runs)
		}
	}
}

// realSalePeople are the sale's visitors as the rehearsal draws them.
func realSalePeople(t *testing.T) []rehearse.Person {
	t.Helper()
	flags := map[string]string{}
	for i := 0; i < len(realSale); i += 2 {
		flags[strings.TrimPrefix(realSale[i], "--")] = realSale[i+1]
	}
	sale, err := rehearse.SaleFrom("", func(name string) (string, bool) { v, ok := flags[name]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	var people []rehearse.Person
	for _, p := range rehearse.People(sale, realSaleSeed) {
		people = append(people, p)
	}
	return people
}

// rehearseCommand runs `caddy waiting-room rehearse` on nd's own Caddyfile and
// reads its report.json.
func rehearseCommand(t *testing.T, nd *node) *saleFigures {
	t.Helper()
	out := t.TempDir()
	args := append([]string{"waiting-room", "rehearse", "--config", filepath.Join(nd.dir, "Caddyfile"), "--room", "sale",
		"--seed", strconv.Itoa(realSaleSeed), "--out", out}, realSale...)
	cmd := exec.Command(nd.bin, args...)
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	msg, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("caddy %s: %v\n%s", strings.Join(args, " "), err, msg)
	}
	raw, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f saleFigures
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	return &f
}

// realVisit is what became of one person in the real sale, in time since the
// sale's start; -1 for what did not happen.
type realVisit struct {
	arrived, admitted, gaveUp time.Duration
	queued                    bool
	problem                   string
}

// playRealSale plays people against nd in real time and returns the figures, as
// the rehearsal counts them.
func playRealSale(t *testing.T, nd *node, people []rehearse.Person) *saleFigures {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now().Add(time.Second)
	visits := make([]realVisit, len(people))
	admissions := &admittedSamples{}
	sampling := make(chan struct{})
	go func() { defer close(sampling); admissions.sample(ctx, nd.admin, "sale", start) }()
	var wg sync.WaitGroup
	for i, p := range people {
		wg.Go(func() { visits[i] = playPerson(ctx, nd.base, start, p) })
	}
	wg.Wait()
	// The counter's last admissions are before the last navigation: one more sample
	// after it is enough.
	time.Sleep(time.Second)
	cancel()
	<-sampling
	problems := 0
	for i, v := range visits {
		if v.problem != "" {
			t.Errorf("visitor %d: %s", i, v.problem)
			problems++
		}
	}
	if problems > 0 {
		t.Logf("%s's log:\n%s", nd.name, tail(nd.log(), 4000))
	}
	f := &saleFigures{Visitors: len(people)}
	var waits []time.Duration
	var cleared time.Duration = -1
	for _, v := range visits {
		switch {
		case v.admitted >= 0:
			f.Admitted++
			waits = append(waits, v.admitted-v.arrived)
			if v.queued {
				cleared = max(cleared, v.admitted)
			}
		case v.gaveUp >= 0:
			f.GaveUp++
			cleared = max(cleared, v.gaveUp)
		}
	}
	slices.Sort(waits)
	if len(waits) > 0 {
		f.WaitP50, f.WaitP90 = nearestRank(waits, 0.5).Seconds(), nearestRank(waits, 0.9).Seconds()
	}
	if cleared >= 0 {
		c := (cleared - visits[0].arrived).Seconds()
		f.ClearsBy = &c
	}
	for _, n := range admissions.perMinute() {
		f.Minutes = append(f.Minutes, struct {
			Admissions int `json:"admissions"`
		}{n})
	}
	return f
}

// nearestRank is the q-quantile of sorted xs as the rehearsal takes it.
func nearestRank(xs []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// navigationDelay is how long after its turn a waiting page's request for the
// site reaches the room: the page's own pause (400 ms, assets/waiting.html's
// admitted()), and the ways of the news and of the request over the internet,
// which the rehearsal takes as 120 ms. These clients are on loopback, so they wait
// them out.
const navigationDelay = 520 * time.Millisecond

// playPerson is one person of the sale, as the waiting page and a shopper do it:
// the first page load at its arrival; in line, the page's socket until its turn
// (or its give-up, which closes the tab), the page's pause and the navigation; in
// the shop, a page every 3 s for its stay, the last a checkout for those who
// check out.
func playPerson(ctx context.Context, base string, start time.Time, p rehearse.Person) realVisit {
	v := realVisit{admitted: -1, gaveUp: -1}
	if !sleepUntil(ctx, start.Add(p.Arrives)) {
		v.problem = "the test ran out of time before its arrival"
		return v
	}
	g := newGuest()
	v.arrived = time.Since(start)
	_, body, err := g.get(base, "/shop/", "text/html")
	switch {
	case err != nil:
		v.problem = "the first page load: " + err.Error()
		return v
	case strings.HasPrefix(body, "upstream "):
		v.admitted = v.arrived
		return shopFor(ctx, g, base, start, p, v)
	}
	v.queued = true
	turn := ctx
	if p.GivesUpAfter >= 0 {
		var cancel context.CancelFunc
		turn, cancel = context.WithDeadline(ctx, start.Add(p.Arrives+p.GivesUpAfter))
		defer cancel()
	}
	c, err := g.socket(turn, base, "/shop/")
	if err != nil {
		v.problem = "the waiting socket: " + err.Error()
		return v
	}
	err = untilAdmitted(turn, c)
	switch {
	case err != nil && turn.Err() != nil && ctx.Err() == nil:
		c.CloseNow() // the tab is closed
		v.gaveUp = time.Since(start)
		return v
	case err != nil:
		c.CloseNow()
		v.problem = "waiting for the turn: " + err.Error()
		return v
	}
	go c.Close(websocket.StatusNormalClosure, "") // the page lets its socket go
	if !sleepFor(turn, navigationDelay) {
		if ctx.Err() == nil {
			v.gaveUp = time.Since(start) // closed the tab before the page loaded the site
		}
		return v
	}
	at := time.Since(start)
	if _, body, err := g.get(base, "/shop/", "text/html"); err != nil || !strings.HasPrefix(body, "upstream ") {
		v.problem = fmt.Sprintf("told of the turn, the navigation got %q (%v)", short(body), err)
		return v
	}
	v.admitted = at
	return shopFor(ctx, g, base, start, p, v)
}

// untilAdmitted reads the waiting socket until the room says admitted.
func untilAdmitted(ctx context.Context, c *websocket.Conn) error {
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return err
		}
		var m queueAnswer
		if json.Unmarshal(data, &m) == nil && m.Type == "admitted" {
			return nil
		}
	}
}

// shopFor is an admitted shopper's stay: a page every 3 s (the sale's clicks), and
// the last at the stay's end, a checkout (which the site answers with the revoke
// command) for those who check out.
func shopFor(ctx context.Context, g *guest, base string, start time.Time, p rehearse.Person, v realVisit) realVisit {
	const every = 3 * time.Second
	in := start.Add(v.admitted)
	for next := every; ; next += every {
		last := next >= p.Stay
		if last {
			next = p.Stay
		}
		if !sleepUntil(ctx, in.Add(next)) {
			v.problem = "the test ran out of time in the shop"
			return v
		}
		path := "/shop/item"
		if last && p.Checkout {
			path = "/shop/done"
		}
		if _, body, err := g.get(base, path, "text/html"); err != nil || !strings.HasPrefix(body, "upstream ") && body != "done" {
			v.problem = fmt.Sprintf("a shopper's page %s, %v after the entry (stay %v), got %q (%v)", path, time.Since(in).Round(time.Millisecond), p.Stay, pageTitle(body), err)
			return v
		}
		if last {
			return v
		}
	}
}

func sleepUntil(ctx context.Context, at time.Time) bool { return sleepFor(ctx, time.Until(at)) }

func sleepFor(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// admittedSamples are the room's admitted_total, read off the admin API's
// /metrics every 250 ms: what the store admitted, at once or from the line.
type admittedSamples struct {
	at    []time.Duration // since the sale's start
	total []float64
}

func (s *admittedSamples) sample(ctx context.Context, admin, room string, start time.Time) {
	re := regexp.MustCompile(`(?m)^caddy_waiting_room_admitted_total\{room="` + regexp.QuoteMeta(room) + `"\} (\S+)$`)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		v, err := scrapeOne(ctx, admin+"/metrics", re)
		if err == nil {
			s.at, s.total = append(s.at, time.Since(start)), append(s.total, v)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func scrapeOne(ctx context.Context, url string, re *regexp.Regexp) (float64, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	m := re.FindSubmatch(body)
	if m == nil {
		return 0, nil // no admission yet: the series is made by the first
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// perMinute are the admissions in each minute since the start, to the last
// admission: the counter's increase between the samples nearest the minutes'
// bounds.
func (s *admittedSamples) perMinute() []int {
	if len(s.total) == 0 {
		return nil
	}
	valueAt := func(t time.Duration) float64 {
		i, _ := slices.BinarySearch(s.at, t)
		switch {
		case i == 0:
			return s.total[0]
		case i == len(s.at):
			return s.total[len(s.total)-1]
		case t-s.at[i-1] < s.at[i]-t:
			return s.total[i-1]
		}
		return s.total[i]
	}
	last := s.total[len(s.total)-1]
	var out []int
	for m := time.Duration(0); valueAt(m*time.Minute) < last; m++ {
		out = append(out, int(valueAt((m+1)*time.Minute)-valueAt(m*time.Minute)))
	}
	return out
}

// calibrateRealSale plays the real sale runs times, each on a fresh Caddy, and
// writes the spread of its figures, with the rehearsal's, into noisePath.
func calibrateRealSale(t *testing.T, people []rehearse.Person, runs int) {
	var rehearsed map[string]figure
	var reals []map[string]figure
	for i := range runs {
		t.Run(fmt.Sprintf("run=%d", i), func(t *testing.T) {
			nd := startFleet(t, 1, func(int) string { return realSaleRoom }).nodes[0]
			if rehearsed == nil {
				rehearsed = rehearseCommand(t, nd).named()
			}
			real := playRealSale(t, nd, people)
			t.Logf("admitted %d, gave up %d, wait p50 %.2f s, p90 %.2f s, clears after %v s, admissions by minute %v",
				real.Admitted, real.GaveUp, real.WaitP50, real.WaitP90, *real.ClearsBy, real.Minutes)
			reals = append(reals, real.named())
			nd.stop(t)
		})
	}
	if t.Failed() {
		t.Fatal("a real run failed: the noise file is left as it was")
	}
	out := noiseFile{
		Note: "The real sale of TestRehearsedAgainstReal played several times, each figure's values, spread and the rehearsal's value. " +
			"Rewritten by: go test -race -run TestRehearsedAgainstReal -rehearse.calibrate 5 .",
		Machine: machine(), Runs: runs, Figures: map[string]*noiseOfOne{},
	}
	for name, r := range rehearsed {
		n := &noiseOfOne{Unit: r.unit, Rehearsed: r.value}
		for _, run := range reals {
			n.Real = append(n.Real, milli(run[name].value)) // a minute a run does not have is 0 admissions
		}
		n.Sigma, n.MeanDiff = milli(spread(n.Real)), milli(mean(n.Real)-r.value)
		out.Figures[name] = n
	}
	for _, run := range reals {
		for name, f := range run {
			if out.Figures[name] == nil && f.value != 0 {
				t.Errorf("a real run has %s = %g, which the rehearsal does not report", name, f.value)
			}
		}
	}
	raw, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(noisePath, append(raw, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(out.Figures)) {
		n := out.Figures[name]
		t.Logf("%-24s rehearsed %8.2f  real %v  σ %.2f  mean diff %+.2f  tolerance %.2f", name, n.Rehearsed, n.Real, n.Sigma, n.MeanDiff, n.tolerance())
	}
}

// spread is a robust standard deviation of xs: the larger of 1.4826 × the median
// absolute deviation and the range ÷ 2.33 (the expected range of five draws of a
// normal distribution is 2.33 σ).
func spread(xs []float64) float64 {
	med := median(xs)
	dev := make([]float64, len(xs))
	for i, x := range xs {
		dev[i] = math.Abs(x - med)
	}
	return max(1.4826*median(dev), (slices.Max(xs)-slices.Min(xs))/2.33)
}

// milli rounds x to a thousandth, as the noise file keeps it.
func milli(x float64) float64 { return math.Round(x*1000) / 1000 }

func mean(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// machine says what the noise was measured on.
func machine() string {
	model := "unknown CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if name, ok := strings.CutPrefix(sc.Text(), "model name\t: "); ok {
				model = name
				break
			}
		}
		f.Close()
	}
	return fmt.Sprintf("%d CPUs, %s, %s/%s, %s", runtime.NumCPU(), model, runtime.GOOS, runtime.GOARCH, runtime.Version())
}

var titleRe = regexp.MustCompile(`<title>([^<]*)</title>`)

func pageTitle(body string) string {
	if m := titleRe.FindStringSubmatch(body); m != nil {
		return m[1]
	}
	return short(body)
}
