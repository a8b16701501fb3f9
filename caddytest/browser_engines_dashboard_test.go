package caddytest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddytest"
)

// The operators' dashboard as it is kept open all day, on a wide screen, a laptop and a
// phone, light and dark, in every engine: no figure is cut or spills out of its tile
// ("estimating…" included), nothing is wider than the screen, one room uses the width
// it has rather than a narrow column, and the header is one slim bar.
func TestEnginesDashboardLayout(t *testing.T) {
	for _, e := range engines {
		for _, dark := range []bool{false, true} {
			scheme := "light"
			if dark {
				scheme = "dark"
			}
			t.Run(e.name+"/"+scheme, func(t *testing.T) {
				p := e.start(t, engineOptions{dark: dark})
				room := startDashboardRoom(t)
				for _, size := range []struct {
					name          string
					width, height int
				}{{"wide", 1680, 1050}, {"laptop", 1280, 800}, {"phone", 390, 844}} {
					p.setViewport(size.width, size.height)
					p.navigate("http://localhost:9081/waiting_room/dashboard")
					card := fmt.Sprintf(`document.querySelector('[data-room=%q]')`, room)
					eventually(t, p.name()+": the room's card with its figures", func() (bool, string) {
						raw, err := p.evalJSON(card + ` ? ` + card + `.querySelector(".eta").textContent : ""`)
						return err == nil && string(raw) == `"estimating…"`, fmt.Sprintf("%s (%v)", raw, err)
					})
					got := engineEval[dashboardLayout](t, p, `(function(){
						var c = `+card+`, cr = c.getBoundingClientRect(), m = document.getElementById("rooms"), ms = getComputedStyle(m);
						var cut = [];
						c.querySelectorAll(".stat:not([hidden])").forEach(function (s) {
							var b = s.querySelector("b"), r = s.getBoundingClientRect();
							if (b.scrollWidth > b.clientWidth || r.left < cr.left || r.right > cr.right) cut.push(b.textContent);
						});
						return {
							cut: cut,
							pageWidth: document.documentElement.scrollWidth, viewWidth: innerWidth,
							cardWidth: cr.width,
							roomsWidth: m.clientWidth - parseFloat(ms.paddingLeft) - parseFloat(ms.paddingRight),
							header: document.querySelector("header").getBoundingClientRect().height,
							title: document.querySelector("h1").getBoundingClientRect().height,
							background: getComputedStyle(document.body).backgroundColor,
							dark: (function (rgb) { return rgb[0] + rgb[1] + rgb[2] < 3 * 128; })(getComputedStyle(document.body).backgroundColor.match(/\d+/g).map(Number))
						};
					})()`)
					what := fmt.Sprintf("%s, %s, %s (%dx%d)", p.name(), scheme, size.name, size.width, size.height)
					t.Logf("%s: %+v", what, got)
					if len(got.Cut) > 0 {
						t.Errorf("%s: figures cut or outside their card: %q", what, got.Cut)
					}
					if got.PageWidth > got.ViewWidth {
						t.Errorf("%s: the page is %d px wide on a %d px screen", what, got.PageWidth, got.ViewWidth)
					}
					if got.CardWidth < 0.95*got.RoomsWidth {
						t.Errorf("%s: the only room's card is %.0f px of the %.0f px it could use", what, got.CardWidth, got.RoomsWidth)
					}
					if got.Header > 2.5*got.Title {
						t.Errorf("%s: the header is %.0f px tall for a %.0f px title", what, got.Header, got.Title)
					}
					if got.Dark != dark {
						t.Errorf("%s: the page is dark %v (background %s)", what, got.Dark, got.Background)
					}
					if c, ok := p.(*chromiumPage); ok {
						c.screenshot(fmt.Sprintf("dashboard-%s-%s.png", scheme, size.name))
					}
				}
				if got := p.problems(); len(got) > 0 {
					t.Errorf("%s reported errors:\n\t%s", p.name(), strings.Join(got, "\n\t"))
				}
			})
		}
	}
}

type dashboardLayout struct {
	Cut                   []string
	PageWidth, ViewWidth  int
	CardWidth, RoomsWidth float64
	Header, Title         float64
	Background            string
	Dark                  bool
}

// startDashboardRoom starts the documented dashboard proxy and one room with a line
// whose wait is not known yet ("estimating…", the widest figure).
func startDashboardRoom(t *testing.T) string {
	t.Helper()
	room := uniqueRoom(t)
	proxy := documentedDashboardProxy(t)
	tester := caddytest.NewTester(t)
	tester.InitServer(proxy.globals(t, "")+fmt.Sprintf(`
http://localhost:%d {
	waiting_room {
		name %s
		capacity 1
	}
	respond "upstream {path}"
}

`, livePort, room)+proxy.site, "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	for i := range 3 {
		if _, in := newVisitor(t).place("/"); in != (i == 0) {
			t.Fatalf("visitor %d: admitted %v", i+1, in)
		}
	}
	return room
}
