package caddytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// The Grafana dashboard in examples/ is checked against a real Prometheus (Debian's
// prometheus, started on loopback) scraping two real Caddy processes on one Redis
// during a small sale: every PromQL expression in the dashboard must come back, through
// Prometheus's HTTP API, with at least one series and values that make sense for the
// sale the test runs. An expression over a metric that does not exist, a wrong label
// or a wrong aggregation over instances fails here, not on the operator's sale day.

// dashboardRateInterval stands in for Grafana's $__rate_interval: four scrapes and
// more at the test's one-second scrape interval.
const dashboardRateInterval = "15s"

// dashboardQuery is one target of one panel of the dashboard.
type dashboardQuery struct {
	panel, refID, expr string
}

func (q dashboardQuery) String() string { return fmt.Sprintf("%q %s: %s", q.panel, q.refID, q.expr) }

func dashboardQueries(t *testing.T) []dashboardQuery {
	t.Helper()
	raw, err := os.ReadFile("../examples/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				RefID string `json:"refId"`
				Expr  string `json:"expr"`
			} `json:"targets"`
			Panels []json.RawMessage `json:"panels"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("examples/grafana-dashboard.json: %v", err)
	}
	var out []dashboardQuery
	for _, p := range dash.Panels {
		if len(p.Panels) > 0 {
			t.Fatalf("row %q holds collapsed panels; this test reads only top-level panels", p.Title)
		}
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Fatalf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Expr == "" {
				t.Fatalf("panel %q target %s has no expr", p.Title, tg.RefID)
			}
			out = append(out, dashboardQuery{p.Title, tg.RefID, tg.Expr})
		}
	}
	return out
}

// documentedMetrics are the metric names docs/metrics.md lists.
func documentedMetrics(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(caddy_waiting_room_\\w+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		names = append(names, m[1])
	}
	return names
}

// plausible says whether the values a panel's query returned fit the sale the test
// runs: capacity 2 on two instances, waiters arriving faster than they are let in,
// some leaving. Every panel of the dashboard needs a rule here.
func plausible(panel string, values map[string]float64) error {
	n := len(values)
	each := func(ok func(v float64) bool, want string) error {
		for series, v := range values {
			if math.IsNaN(v) || math.IsInf(v, 0) || !ok(v) {
				return fmt.Errorf("series %s is %v, want %s", series, v, want)
			}
		}
		return nil
	}
	perInstance := func(err error) error {
		if err == nil && n != 2 {
			return fmt.Errorf("%d series, want one per instance (2)", n)
		}
		return err
	}
	positiveRate := func(v float64) bool { return v > 0 && v < 10_000 }
	wait := func(v float64) bool { return v > 0 && v <= 7200 }
	if n == 0 {
		return fmt.Errorf("no series")
	}
	switch panel {
	case "Active":
		return each(func(v float64) bool { return v >= 1 && v <= 2 }, "1..2 (capacity 2)")
	case "Waiting":
		return each(func(v float64) bool { return v >= 1 }, "at least 1")
	case "Capacity":
		return each(func(v float64) bool { return v == 2 }, "2")
	case "Utilisation":
		return each(func(v float64) bool { return v > 0 && v <= 1 }, "in (0, 1]")
	case "Away":
		return each(func(v float64) bool { return v >= 1 }, "at least 1 (the line's tail is never polled)")
	case "Active, waiting, away and capacity":
		return each(func(v float64) bool { return v >= 1 }, "at least 1")
	case "Admissions per minute", "Arrivals into the line per minute", "Abandonment per minute":
		return each(positiveRate, "a positive rate")
	case "Wait in line (p50, p90, p99)":
		return each(wait, "a wait in (0, 7200] s")
	case "Admissions per minute by instance", "Arrivals into the line per minute by instance",
		"Abandonment per minute by instance":
		return perInstance(each(positiveRate, "a positive rate"))
	case "Median wait by instance":
		return perInstance(each(wait, "a wait in (0, 7200] s"))
	case "Instances reporting":
		return each(func(v float64) bool { return v == 2 }, "2")
	case "Capacity in force, the shop's p90 and its target":
		// The capacity (2), the p90 of an upstream that answers at once, and the
		// target (1s): all above 0, none above the target.
		return each(func(v float64) bool { return v > 0 && v <= 2 }, "in (0, 2]")
	case "Shop failures per minute":
		return each(func(v float64) bool { return v == 0 }, "0 (the sale's upstream never fails)")
	}
	return fmt.Errorf("no plausibility rule for panel %q: add one to this test", panel)
}

// sale runs a small sale on the fleet until stop: two arrivals per round, alternating
// instances; the head of the line polls and, once in, checks out three rounds later
// (which frees the slot), so the line grows; the rest of the line answers once on
// joining and is never polled again, so it goes away after queue_ttl; every third round the last waiter leaves from the
// page. It counts what it did, and every request that failed.
type sale struct {
	rounds, admitted, left, errors atomic.Int64
	lastErr                        atomic.Value
}

// fail counts a failed request, but for one the sale's own end cut short: a socket
// dialled as the test stops the sale fails with its context.
func (s *sale) fail(ctx context.Context, err error) {
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return
	}
	s.errors.Add(1)
	s.lastErr.Store(err.Error())
}

func (s *sale) run(ctx context.Context, f *fleet) {
	type buyer struct {
		g     *guest
		round int
	}
	var line []*guest
	var buyers []buyer
	for i := 0; ctx.Err() == nil; i++ {
		s.rounds.Add(1)
		nd := f.nodes[i%2]
		for len(buyers) > 0 && i-buyers[0].round >= 3 {
			if _, _, err := buyers[0].g.get(nd.base, "/shop/done", ""); err != nil {
				s.fail(ctx, err)
			}
			buyers = buyers[1:]
		}
		for range 2 {
			g := newGuest()
			if _, ok, err := g.place(nd.base, "/shop"); err != nil {
				s.fail(ctx, err)
			} else if ok {
				buyers = append(buyers, buyer{g, i})
			} else {
				line = append(line, g)
				// Its page answers once, as a real browser's does: a waiter never
				// heard from after joining would be dropped, not kept away.
				if _, _, err := g.place(nd.base, "/shop"); err != nil {
					s.fail(ctx, err)
				}
			}
		}
		for j := 0; j < len(line) && j < 4; {
			_, ok, err := line[j].place(nd.base, "/shop")
			switch {
			case err != nil:
				s.fail(ctx, err)
				j++
			case ok:
				s.admitted.Add(1)
				buyers = append(buyers, buyer{line[j], i})
				line = slices.Delete(line, j, j+1)
			default:
				j++
			}
		}
		if i%3 == 0 && len(line) > 4 {
			g := line[len(line)-1]
			line = line[:len(line)-1]
			if c, err := g.socket(ctx, nd.base, "/shop"); err != nil {
				s.fail(ctx, err)
			} else {
				if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"leave"}`)); err != nil {
					s.fail(ctx, err)
				} else {
					s.left.Add(1)
				}
				c.Close(websocket.StatusNormalClosure, "")
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func TestGrafanaDashboardAgainstRealPrometheus(t *testing.T) {
	queries := dashboardQueries(t)
	documented := documentedMetrics(t)
	if len(documented) < 7 {
		t.Fatalf("docs/metrics.md lists %d metrics; the table's shape changed?", len(documented))
	}
	metricName := regexp.MustCompile(`caddy_\w+`)
	for _, q := range queries {
		for _, m := range metricName.FindAllString(q.expr, -1) {
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_sum"), "_count")
			if !slices.Contains(documented, m) && !slices.Contains(documented, base) {
				t.Errorf("%v uses %s, which docs/metrics.md does not list", q, m)
			}
		}
	}

	srv := testredis.Start(t)
	room := uniqueRoom(t)
	f := startFleet(t, 2, func(int) string {
		// queue_ttl 5s sends the unpolled tail of the line away within the test, for
		// the Away panel; away_ttl (10m by default) keeps their places. adapt is on,
		// held at the capacity by its min and max, for the Shop row's target.
		return roomBlock(room, "/shop*", 2, "redis redis://"+srv.Addr, "queue_ttl 5s", "adapt {\n\t\t\tlatency 1s\n\t\t\tmin 2\n\t\t\tmax 2\n\t\t}")
	})
	var targets []string
	for _, nd := range f.nodes {
		targets = append(targets, strings.TrimPrefix(nd.admin, "http://"))
	}
	prom := startPrometheus(t, targets)
	waitFor(t, "prometheus to scrape both instances", func() bool {
		up, err := promQuery(prom, `up{job="caddy"} == 1`)
		return err == nil && len(up) == 2
	})

	ctx, cancel := context.WithCancel(context.Background())
	var s sale
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); s.run(ctx, f) }()
	stopSale := func() { cancel(); wg.Wait() }
	defer stopSale()

	// Rates and quantiles need a few scrapes of the sale: each query is asked until it
	// answers plausibly (a liveness bound, not a timing assertion).
	passed := map[int]bool{}
	last := map[int]string{}
	evaluated := 0
	deadline := time.Now().Add(90 * time.Second)
	for len(passed) < len(queries) && time.Now().Before(deadline) {
		for i, q := range queries {
			if passed[i] {
				continue
			}
			expr := strings.ReplaceAll(q.expr, "$__rate_interval", dashboardRateInterval)
			expr = strings.ReplaceAll(expr, "$room", regexp.QuoteMeta(room))
			values, err := promQuery(prom, expr)
			evaluated++
			if err == nil {
				err = plausible(q.panel, values)
			}
			if err != nil {
				last[i] = fmt.Sprintf("%v (%v)", err, values)
				continue
			}
			passed[i] = true
			t.Logf("%s -> %v", q, values)
		}
		time.Sleep(500 * time.Millisecond)
	}
	stopSale()
	t.Logf("sale: %d rounds, %d admitted from the line, %d left, %d request errors; %d evaluations of %d queries",
		s.rounds.Load(), s.admitted.Load(), s.left.Load(), s.errors.Load(), evaluated, len(queries))
	if n := s.errors.Load(); n > 0 {
		t.Errorf("the sale had %d failed requests; the last: %v", n, s.lastErr.Load())
	}
	if s.admitted.Load() == 0 || s.left.Load() == 0 {
		t.Errorf("the sale admitted %d from the line and saw %d leave: the test needs both", s.admitted.Load(), s.left.Load())
	}
	for i, q := range queries {
		if !passed[i] {
			t.Errorf("%v: never plausible; last: %s", q, last[i])
		}
	}
}
