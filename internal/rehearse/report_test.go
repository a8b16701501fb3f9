package rehearse

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/capacity"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
)

// fullSale has everything a report shows: a line that forms and clears, give-ups,
// sleeping phones, no-shows, checkouts, a shop that slows, and three settings
// compared, one of them adapting to the shop.
func fullSale() (Sale, []Variant) {
	sale := Sale{
		Arrivals: []Segment{{N: 600, Over: 5 * time.Minute}, {N: 400, Over: 15 * time.Minute}},
		Stay:     Spread{Base: 2 * time.Minute, Spread: time.Minute},
		GiveUp:   []GiveUp{{Share: 0.2, After: 5 * time.Minute}},
		Sleep:    Sleep{Share: 0.1, For: Spread{Base: 2 * time.Minute, Spread: time.Minute}},
		NoShows:  0.02,
		Checkout: 0.5,
		Shop:     []ShopPhase{{Servers: 25, Service: 100 * time.Millisecond}, {From: 15 * time.Minute, Servers: 25, Service: 150 * time.Millisecond}},
	}
	// The shop's p90 is 0.1 s × 1.4 × inside ÷ 25: 400 ms at about 70 inside,
	// and at about 48 once it slows.
	adapting := configFor(75)
	adapting.Adapt = &capacity.Targets{Latency: 400 * time.Millisecond, Errors: capacity.DefaultErrors, Min: 10, Max: 1000}
	return sale, []Variant{
		{Label: "capacity 75", Config: configFor(75)},
		{Label: "capacity 150", Config: configFor(75), Patch: []byte(`{"capacity": 150}`)},
		{Label: "adapt 400ms", Config: adapting},
	}
}

// reports are the reports written, by seed, so that each is played once.
var reports = map[uint64][2][]byte{}

func writeReport(t *testing.T, seed uint64) (js, page []byte) {
	t.Helper()
	if r, ok := reports[seed]; ok {
		return r[0], r[1]
	}
	defer func() { reports[seed] = [2][]byte{js, page} }()
	sale, vs := fullSale()
	res, err := Rehearse(context.Background(), sale, vs, Options{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	rep := Report{Seed: seed, Sale: sale, Results: res}
	jsonPath, htmlPath, err := rep.Write(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	js, err = os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	page, err = os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	return js, page
}

// The same seed gives the same report, byte for byte; another seed, another sale.
func TestTheSameSeedGivesTheSameReport(t *testing.T) {
	js1, page1 := writeReport(t, 7)
	delete(reports, 7)
	js2, page2 := writeReport(t, 7)
	if !bytes.Equal(js1, js2) {
		t.Fatal("report.json differs between two runs of seed 7")
	}
	if !bytes.Equal(page1, page2) {
		t.Fatal("report.html differs between two runs of seed 7")
	}
	js3, _ := writeReport(t, 8)
	if bytes.Equal(js1, js3) {
		t.Fatal("seeds 7 and 8 played the same sale")
	}
}

// report.json leads with the names scripts rely on, in seconds and counts.
func TestReportJSONHasTheNamesScriptsRelyOn(t *testing.T) {
	js, _ := writeReport(t, 1)
	var top map[string]json.RawMessage
	if err := json.Unmarshal(js, &top); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"visitors", "admitted", "gave_up", "clears_after_seconds", "wait_p50_seconds", "wait_p90_seconds", "max_waiting", "per_minute", "compare"} {
		if _, ok := top[name]; !ok {
			t.Errorf("report.json has no %q", name)
		}
	}
	var rep struct {
		Summary
		Minutes []Minute  `json:"per_minute"`
		Compare []*Result `json:"compare"`
	}
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Visitors != 1000 || rep.Admitted+rep.GaveUp+rep.NoShows+rep.InLine+rep.TurnedAway != rep.Visitors {
		t.Fatalf("every visitor is counted once: %+v", rep.Summary)
	}
	arrivals, admitted := 0, 0
	for _, m := range rep.Minutes {
		arrivals += m.Arrivals
		admitted += m.Admissions
	}
	if arrivals != rep.Visitors || admitted < rep.Admitted {
		t.Fatalf("the minutes add up to %d arrivals and %d admissions, against %d visitors and %d admitted", arrivals, admitted, rep.Visitors, rep.Admitted)
	}
	if len(rep.Compare) != 2 || rep.Compare[1].Summary.Shop == nil || rep.Compare[1].Summary.Shop.Target == nil {
		t.Fatalf("the compared settings, with adapt's shop: %+v", rep.Compare)
	}
	if rep.ClearsAfter == nil || *rep.ClearsAfter <= 0 || rep.WaitP90 < rep.WaitP50 || rep.MaxWaiting == 0 {
		t.Fatalf("a line formed and cleared: %+v", rep.Summary)
	}
}

// The page opens from a file with no network: no script, nothing fetched, every
// link within the page.
func TestReportOpensWithNoNetwork(t *testing.T) {
	_, page := writeReport(t, 1)
	html := string(page)
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", "<object", "@import", "url(", "src="} {
		if strings.Contains(strings.ToLower(html), bad) {
			t.Errorf("the page has %q", bad)
		}
	}
	for _, m := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(html, -1) {
		if !strings.HasPrefix(m[1], "#") {
			t.Errorf("a link leaves the page: %s", m[1])
		}
	}
	for _, m := range regexp.MustCompile(`https?://[^"' <]*`).FindAllString(html, -1) {
		if m != "http://www.w3.org/2000/svg" {
			t.Errorf("an address in the page: %s", m)
		}
	}
}

// Every chart is an image with a title and a description in words, its axes
// labelled, and its numbers in a table; every in-page link and label points at
// something there.
func TestReportIsReadableWithoutTheCharts(t *testing.T) {
	_, page := writeReport(t, 1)
	html := string(page)
	if !strings.Contains(html, `<html lang="en">`) || !strings.Contains(html, "<title>") {
		t.Fatal("the page has no language or title")
	}
	svgs := regexp.MustCompile(`(?s)<svg role="img" aria-labelledby="([^ "]+) ([^ "]+)".*?</svg>`).FindAllStringSubmatch(html, -1)
	if len(svgs) != 9 {
		t.Fatalf("%d charts, want 9 with a shop", len(svgs))
	}
	for _, svg := range svgs {
		for _, id := range svg[1:3] {
			if !strings.Contains(svg[0], `id="`+id+`"`) {
				t.Errorf("a chart is labelled by %q, which it does not hold", id)
			}
		}
		if !regexp.MustCompile(`<desc id="[^"]+">[^<]{40,}</desc>`).MatchString(svg[0]) {
			t.Errorf("a chart without a description in words: %.120s", svg[0])
		}
		if strings.Count(svg[0], `class="label"`) != 2 {
			t.Errorf("a chart without both axes labelled: %.120s", svg[0])
		}
	}
	if n := strings.Count(html, "<summary>The chart's numbers</summary>"); n != len(svgs) {
		t.Errorf("%d charts and %d tables of their numbers", len(svgs), n)
	}
	for _, m := range regexp.MustCompile(`(href="#|aria-labelledby=")([^"]+)"`).FindAllStringSubmatch(html, -1) {
		for _, id := range strings.Fields(m[2]) {
			if !strings.Contains(html, `id="`+id+`"`) {
				t.Errorf("%s%s\" points at nothing", m[1], id)
			}
		}
	}
	if strings.Contains(html, "<th>") {
		t.Error("a table header without a scope")
	}
}

// Every colour a line or a text is drawn in stands out from the white page by
// 4.5:1 or more: more than WCAG asks of lines (3:1), as much as it asks of text.
func TestReportColoursContrastWithThePage(t *testing.T) {
	_, page := writeReport(t, 1)
	colours := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?:stroke|fill|color)[:=]"?(#[0-9a-fA-F]{6})`).FindAllStringSubmatch(string(page), -1) {
		colours[strings.ToLower(m[1])] = true
	}
	decorative := map[string]bool{"#dcdcdc": true, "#c8c8c8": true} // grid lines and table rules, not information
	if len(colours) < 6 {
		t.Fatalf("found only %d colours: %v", len(colours), colours)
	}
	for c := range colours {
		if decorative[c] {
			continue
		}
		if r := contrast(c, "#ffffff"); r < 4.5 {
			t.Errorf("%s on white: %.2f:1", c, r)
		}
	}
}

// contrast is WCAG's contrast ratio of two sRGB colours.
func contrast(a, b string) float64 {
	lum := func(hex string) float64 {
		var l [3]float64
		for i := range 3 {
			v, _ := strconv.ParseUint(hex[1+2*i:3+2*i], 16, 8)
			c := float64(v) / 255
			if c <= 0.04045 {
				l[i] = c / 12.92
			} else {
				l[i] = math.Pow((c+0.055)/1.055, 2.4)
			}
		}
		return 0.2126*l[0] + 0.7152*l[1] + 0.0722*l[2]
	}
	la, lb := lum(a), lum(b)
	return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)
}

func TestTheTerminalSummary(t *testing.T) {
	sale := Sale{Arrivals: atOnce(1000), Stay: Spread{Base: 2 * time.Minute}, Checkout: 1}
	res := rehearse(t, sale, room1(100))
	got := (&Report{Seed: 1, Sale: sale, Results: res}).Text()
	for _, want := range []string{"1,000 visitors over 1 s (seed 1)", "admitted 1,000, gave up 0, no-shows 0", "the line clears 18 min 5 s after the first arrival; at most 900 waiting"} {
		if !strings.Contains(got, want) {
			t.Errorf("the summary does not say %q:\n%s", want, got)
		}
	}
	// A line still there at the horizon does not clear, and the summary says how
	// many are left in it.
	res, err := Rehearse(context.Background(), sale, []Variant{room1(100)}, Options{Seed: 1, Horizon: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	got = (&Report{Seed: 1, Sale: sale, Results: res}).Text()
	if want := "the line does not clear within the rehearsal (700 still in line)"; !strings.Contains(got, want) {
		t.Errorf("the summary does not say %q:\n%s", want, got)
	}
}

// A lottery and mode random draw from the rehearsal's seed too: the same seed gives
// the same report, byte for byte, and another seed another order.
func TestTheSameSeedGivesTheSameDraws(t *testing.T) {
	start := simZero.Add(10 * time.Minute)
	lottery := configFor(50)
	lottery.Events = []settings.Event{{Start: start, End: start.Add(time.Hour), Prequeue: 10 * time.Minute, Shuffle: true}}
	sale := Sale{Arrivals: []Segment{{N: 400, Over: 15 * time.Minute}}, Stay: Spread{Base: time.Minute, Spread: 30 * time.Second}}
	play := func(seed uint64) []byte {
		res, err := Rehearse(context.Background(), sale, []Variant{
			{Label: "random", Config: configFor(50), Patch: []byte(`{"mode": "random"}`)},
			{Label: "lottery", Config: lottery},
		}, Options{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		js, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		return js
	}
	first := play(3)
	if again := play(3); !bytes.Equal(first, again) {
		t.Fatal("two rehearsals of seed 3 drew differently")
	}
	if bytes.Equal(first, play(4)) {
		t.Fatal("seeds 3 and 4 drew the same")
	}
}
