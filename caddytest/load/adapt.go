package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

func init() {
	register(section{
		name:  "adapt",
		about: "the adaptive capacity against a capacity guessed 4× too high and 4× too low, on a real shop with the same arrivals, whose limit halves midway and comes back",
		order: 95,
		run:   runAdapt,
	})
}

// The shop of the comparison (testdata/shop, a process of its own): adaptShopLimit
// requests served at once, adaptService each, the rest waiting their turn. At the
// p90 target of adaptTarget its right capacity is about adaptRight visitors, each
// keeping one request in flight: the capacity adapt settles at, and what the
// guesses are 4× off.
const (
	adaptShopLimit = 4
	adaptService   = 100 * time.Millisecond
	adaptTarget    = 300 * time.Millisecond
	adaptRight     = 10
	// Every visitor, once admitted, makes adaptItems requests one after another and
	// checks out; waiters hold the page's WebSocket until told their turn. Arrivals come at adaptArrivals a second, a little more than the shop
	// serves at full speed (limit / service / items = 5 a second), so a line waits.
	adaptItems    = 8
	adaptArrivals = 6
	// The run: the shop at full limit, then halved, then back, each a third.
	adaptPhase = 45 * time.Second
)

// adaptRun is one configuration's run: what its room is, and what it measured.
type adaptRun struct {
	name  string
	block string // the waiting_room block's settings

	mu        sync.Mutex
	answers   []time.Duration // every shop request's time to first byte as the visitor saw it, for the plot
	latencies []time.Duration // those answered after the warm-up
	steady    []time.Duration // those of them answered outside the 5 s after a change of the shop
	served    int             // shop requests answered after the warm-up
	waits     []time.Duration // admitted visitors' time in line
	stillIn   int             // visitors still in line at the end
	timeline  []adaptPoint
	limit     atomic.Int64 // the shop's limit now
}

// adaptPoint is one second of a run: the capacity in force and the p90 of the
// shop's requests answered in that second.
type adaptPoint struct {
	at       time.Duration
	capacity int
	p90      time.Duration
	limit    int
}

func runAdapt(ctx context.Context, r *rig, o options) ([]row, error) {
	phase := adaptPhase
	if o.quick {
		phase = 5 * time.Second
	}
	shop, err := r.buildShop()
	if err != nil {
		return nil, err
	}
	runs := []*adaptRun{
		{name: "capacity guessed 4× too high", block: fmt.Sprintf("capacity %d", 4*adaptRight)},
		{name: "capacity guessed 4× too low", block: fmt.Sprintf("capacity %d", adaptRight/4)},
		{name: "adapt", block: fmt.Sprintf("capacity %d\n\t\tadapt {\n\t\t\tlatency %v\n\t\t\tmin 1\n\t\t\tmax %d\n\t\t}", 4*adaptRight, adaptTarget, 10*adaptRight)},
	}
	var rows []row
	for i, run := range runs {
		if err := run.run(ctx, r, shop, i, phase); err != nil {
			return rows, fmt.Errorf("%s: %w", run.name, err)
		}
		rows = append(rows, run.rows(phase)...)
	}
	if err := writeAdaptPlot(filepath.Join(r.dir, "adapt.svg"), runs, phase); err != nil {
		return rows, err
	}
	if o.plot != "" {
		if err := copyFile(filepath.Join(r.dir, "adapt.svg"), o.plot); err != nil {
			return rows, err
		}
	}
	return rows, nil
}

// buildShop compiles testdata/shop.
func (r *rig) buildShop() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(r.dir, "shop")
	cmd := exec.CommandContext(r.ctx, "go", "build", "-o", bin, "./testdata/shop")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./testdata/shop: %v\n%s", err, out)
	}
	return bin, nil
}

// run starts a shop and a Caddy with the run's room in front of it, sends the
// arrivals for three phases (the shop's limit full, halved, full) and measures.
func (run *adaptRun) run(ctx context.Context, r *rig, shopBin string, i int, phase time.Duration) error {
	port, err := r.freePort()
	if err != nil {
		return err
	}
	shopAddr := "127.0.0.1:" + strconv.Itoa(port)
	shop, err := r.start(fmt.Sprintf("adapt-shop-%d", i), nil, shopBin, "-addr", shopAddr,
		"-limit", strconv.Itoa(adaptShopLimit), "-service", adaptService.String())
	if err != nil {
		return err
	}
	defer shop.stop()
	if err := waitHTTP(ctx, shop, "http://"+shopAddr+"/healthz"); err != nil {
		return err
	}
	in, err := r.startCaddy(fmt.Sprintf("adapt-%d", i), caddyConfig{"shop": fmt.Sprintf(
		"\twaiting_room {\n\t\tname shop\n\t\t%s\n\t}\n\treverse_proxy %s", run.block, shopAddr)})
	if err != nil {
		return err
	}
	defer in.stop()
	base := in.url("shop")

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	warm := phase / 3 // the first part of the first phase settles: not measured
	var wg sync.WaitGroup
	wg.Go(func() { run.watch(ctx, in, start) })
	for p, l := range []int{adaptShopLimit, adaptShopLimit / 2, adaptShopLimit} {
		if err := setShopLimit(shopAddr, l); err != nil {
			return err
		}
		run.limit.Store(int64(l))
		end := start.Add(time.Duration(p+1) * phase)
		for tick := time.NewTicker(time.Second / adaptArrivals); time.Now().Before(end); {
			select {
			case <-ctx.Done():
				tick.Stop()
				return ctx.Err()
			case <-tick.C:
			}
			wg.Go(func() { run.visitor(ctx, base, start, warm, phase) })
		}
	}
	cancel()
	wg.Wait()
	if !in.alive() || !shop.alive() {
		return fmt.Errorf("a process died:\n%s\n%s", in.log(), shop.log())
	}
	return nil
}

func setShopLimit(addr string, limit int) error {
	resp, err := http.PostForm("http://"+addr+"/control", url.Values{"limit": {strconv.Itoa(limit)}})
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("shop control: %d", resp.StatusCode)
	}
	return nil
}

// visitor is one arrival: in line until admitted, told so over the waiting page's
// WebSocket as a browser is, then adaptItems requests and the checkout. What it saw
// after warm counts.
func (run *adaptRun) visitor(ctx context.Context, base string, start time.Time, warm, phase time.Duration) {
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Transport: siteClient.Transport, Timeout: time.Minute}
	joined := time.Now()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/item", nil)
	req.Header.Set("Accept", "application/json")
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return
	}
	var body struct {
		Status string `json:"status"`
	}
	queued := strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") &&
		json.NewDecoder(resp.Body).Decode(&body) == nil && body.Status == "queued"
	resp.Body.Close()
	if !queued {
		run.record(time.Since(t0), time.Since(start), warm, phase)
	} else if !awaitTurn(ctx, client, base+"/item") {
		if ctx.Err() != nil {
			run.mu.Lock()
			run.stillIn++
			run.mu.Unlock()
		}
		return
	}
	if time.Since(start) > warm {
		run.mu.Lock()
		run.waits = append(run.waits, time.Since(joined))
		run.mu.Unlock()
	}
	for range adaptItems - 1 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/item", nil)
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return
		}
		resp.Body.Close()
		run.record(time.Since(t0), time.Since(start), warm, phase)
	}
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, base+"/done", nil)
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
	}
}

// awaitTurn holds the waiting page's WebSocket at address, with the client's cookies,
// until the room says admitted; false when the run ends first or the socket fails.
func awaitTurn(ctx context.Context, client *http.Client, address string) bool {
	u, _ := url.Parse(address)
	hdr := http.Header{"Origin": {u.Scheme + "://" + u.Host}}
	for _, c := range client.Jar.Cookies(u) {
		hdr.Add("Cookie", c.Name+"="+c.Value)
	}
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(address, "http"), &websocket.DialOptions{
		Subprotocols: []string{"waiting-room.v1"}, HTTPHeader: hdr, HTTPClient: client,
	})
	if err != nil {
		return false
	}
	defer c.CloseNow()
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return false
		}
		var m struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(data, &m) == nil && m.Type == "admitted" {
			return true
		}
	}
}

// record counts one shop request answered in ttfb, since into the run; the figures
// count what was answered after warm, the steady p90 what was not in the 5 s after a
// change of the shop (at each phase's start).
func (run *adaptRun) record(ttfb, since, warm, phase time.Duration) {
	run.mu.Lock()
	defer run.mu.Unlock()
	run.answers = append(run.answers, ttfb)
	if since <= warm {
		return
	}
	run.latencies = append(run.latencies, ttfb)
	run.served++
	if since%phase > 5*time.Second {
		run.steady = append(run.steady, ttfb)
	}
}

// watch reads the capacity in force every second, with the p90 of the shop's
// requests answered in that second.
func (run *adaptRun) watch(ctx context.Context, in *instance, start time.Time) {
	seen := 0
	for t := time.NewTicker(time.Second); ; {
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		c, err := readRoom(ctx, in, "shop")
		if err != nil {
			continue
		}
		run.mu.Lock()
		window := slices.Clone(run.answers[seen:])
		seen = len(run.answers)
		run.timeline = append(run.timeline, adaptPoint{at: time.Since(start), capacity: c.Capacity,
			p90: percentile(window, 0.9), limit: int(run.limit.Load())})
		run.mu.Unlock()
	}
}

// rows are the run's figures: the shop's p90 against the target, its throughput as a
// share of what it could serve (its limit over the service time, through the
// phases), and the median wait of the visitors let in, after the warm-up.
func (run *adaptRun) rows(phase time.Duration) []row {
	run.mu.Lock()
	defer run.mu.Unlock()
	settled := run.settled(phase)
	measured := 3*phase - phase/3
	// Full limit for two thirds of the measured time less the warm-up, half for one.
	most := (float64(adaptShopLimit)*(2*phase-phase/3).Seconds() + float64(adaptShopLimit/2)*phase.Seconds()) / adaptService.Seconds()
	p90 := percentile(run.latencies, 0.9)
	figure := func(what string) string { return fmt.Sprintf("%s: %s", run.name, what) }
	share := float64(run.served) / most
	steady := percentile(run.steady, 0.9)
	steadyValue := steady.Round(time.Millisecond).String()
	if len(run.steady) == 0 {
		steadyValue = "no requests" // a run too short to have any
	}
	rows := []row{
		{figure: figure("the shop's p90 time to first byte"), value: p90.Round(time.Millisecond).String(),
			baseline: "target " + adaptTarget.String(), ratio: fmt.Sprintf("%.2f", float64(p90)/float64(adaptTarget)),
			target: "≤ 1", verdict: verdict(p90 <= adaptTarget)},
		{figure: figure("the shop's throughput, share of its most"), value: fmt.Sprintf("%.0f req/s", float64(run.served)/measured.Seconds()),
			baseline: fmt.Sprintf("%.0f req/s", most/measured.Seconds()), ratio: fmt.Sprintf("%.2f", share),
			target: "≥ 0.90", verdict: verdict(share >= 0.90)},
		{figure: figure("the shop's p90, but for the 5 s after each change of the shop"), value: steadyValue,
			baseline: "target " + adaptTarget.String(), ratio: fmt.Sprintf("%.2f", float64(steady)/float64(adaptTarget))},
		{figure: figure("median wait in line of those let in"), value: fmt.Sprintf("%.0f s", median(seconds(run.waits))),
			baseline: fmt.Sprintf("%d still in line at the end", run.stillIn)},
	}
	if settled != nil {
		rows = append(rows, row{figure: figure("into 0.5–1.5× the shop's right capacity for good, after the start, the halving, the recovery"),
			value: strings.Join(settled, ", ")})
	}
	return rows
}

// settled is, for each phase of an adapt run, how long after the phase began the
// capacity entered 0.5–1.5× the shop's right capacity for the rest of the phase
// ("never" if it did not); nil for a fixed capacity.
func (run *adaptRun) settled(phase time.Duration) []string {
	if !strings.Contains(run.block, "adapt") {
		return nil
	}
	var out []string
	for p, right := range []int{adaptRight, adaptRight / 2, adaptRight} {
		from, to := time.Duration(p)*phase, time.Duration(p+1)*phase
		in := time.Duration(-1)
		for _, pt := range run.timeline {
			if pt.at < from || pt.at >= to {
				continue
			}
			ok := 2*pt.capacity >= right && 2*pt.capacity <= 3*right
			switch {
			case ok && in < 0:
				in = pt.at - from
			case !ok:
				in = -1
			}
		}
		if in < 0 {
			out = append(out, "never")
		} else {
			out = append(out, in.Round(time.Second).String())
		}
	}
	return out
}

func seconds(d []time.Duration) []float64 {
	out := make([]float64, len(d))
	for i, v := range d {
		out[i] = float64(v.Round(time.Second) / time.Second)
	}
	return out
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}
