package caddytest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// axeTags are the axe-core rule sets of WCAG 2.2 levels A and AA (each version's new
// rules carry its own tag).
const axeTags = `["wcag2a","wcag2aa","wcag21a","wcag21aa","wcag22aa"]`

// The waiting page (queued, and with the hand-off's QR code and link shown) and the
// operators' dashboard pass axe-core's WCAG 2.2 A and AA rules in every engine, light
// and dark: contrast is checked in both schemes.
func TestEnginesAccessibility(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "axe", "axe.min.js"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range engines {
		for _, dark := range []bool{false, true} {
			scheme := map[bool]string{false: "light", true: "dark"}[dark]
			t.Run(e.name+"/"+scheme, func(t *testing.T) {
				p := e.start(t, engineOptions{dark: dark})
				room := startDashboardRoom(t)
				p.navigate(liveBase + "/tickets")
				engineShowing(t, p, "wr-position", "3")
				checkAxe(t, p, string(src), "the waiting page")
				engineEval[bool](t, p, `(function(){document.getElementById("wr-handoff").click();return true})()`)
				eventually(t, p.name()+": the hand-off link and QR code", func() (bool, string) {
					raw, err := p.evalJSON(`(function(){var q=document.getElementById("wr-handoff-qr");return document.getElementById("wr-handoff-link").value!==""&&q.complete&&q.naturalWidth>0})()`)
					return err == nil && string(raw) == "true", fmt.Sprintf("%s (%v)", raw, err)
				})
				checkAxe(t, p, string(src), "the waiting page with the hand-off shown")

				p.navigate("http://localhost:9081/waiting_room/dashboard")
				card := fmt.Sprintf(`document.querySelector('[data-room=%q]')`, room)
				eventually(t, p.name()+": the room's card", func() (bool, string) {
					raw, err := p.evalJSON(`!!` + card)
					return err == nil && string(raw) == "true", fmt.Sprintf("%s (%v)", raw, err)
				})
				checkAxe(t, p, string(src), "the dashboard")
			})
		}
	}
}

// axeViolation is one failed rule, with the elements it failed on.
type axeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// checkAxe injects axe-core into the page, runs the WCAG rules and fails the test on
// every violation. The run is a promise, which not every protocol awaits: its result
// is left in the page and polled.
func checkAxe(t *testing.T, p enginePage, src, what string) {
	t.Helper()
	engineEval[bool](t, p, `(function(){`+src+`
		window.__wrAxe = null;
		axe.run(document, {runOnly: {type: "tag", values: `+axeTags+`}, resultTypes: ["violations"]}).then(function (r) {
			window.__wrAxe = {done: true, violations: r.violations.map(function (v) {
				return {id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(function (n) { return n.target.join(" ") + ": " + n.failureSummary; })};
			})};
		}, function (e) { window.__wrAxe = {done: true, error: String(e)}; });
		return true;
	})()`)
	var res struct {
		Done       bool           `json:"done"`
		Error      string         `json:"error"`
		Violations []axeViolation `json:"violations"`
	}
	eventually(t, p.name()+": axe-core to finish on "+what, func() (bool, string) {
		res.Done = false
		raw, err := p.evalJSON(`window.__wrAxe`)
		if err != nil {
			return false, err.Error()
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return false, err.Error()
		}
		return res.Done, string(raw)
	})
	if res.Error != "" {
		t.Fatalf("%s: axe-core failed on %s: %s", p.name(), what, res.Error)
	}
	for _, v := range res.Violations {
		t.Errorf("%s: %s breaks %s (%s, %s):\n\t%s", p.name(), what, v.ID, v.Impact, v.Help, strings.Join(v.Nodes, "\n\t"))
	}
	t.Logf("%s: %s: %d axe-core violations", p.name(), what, len(res.Violations))
}
