package caddytest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The console shows the adaptive capacity: what it decided last and why, the capacity
// in force over the last hour, and beside it the shop's p90 and adapt's target, from
// the server's history.
func TestBrowserConsoleAdapt(t *testing.T) {
	room := uniqueRoom(t)
	startSiteWithConsole(t, fmt.Sprintf(`
http://localhost:%d {
	waiting_room {
		name %s
		capacity 5
		adapt {
			latency 1s
			min 2
			max 50
		}
	}
	respond "upstream {path}"
}

`, livePort, room))
	shopper := newVisitor(t)
	for range 5 {
		if _, in := shopper.place("/"); !in {
			t.Fatal("the shopper was queued in an empty room")
		}
	}

	b := newBrowser(t)
	b.do(chromedp.EmulateViewport(1280, 1400), chromedp.Navigate("http://localhost:9081/waiting_room/dashboard"))
	card := fmt.Sprintf(`document.querySelector('[data-room=%q]')`, room)
	inCard := func(js string) string { return fmt.Sprintf(`(function(){var c=%s;if(!c)return null;%s})()`, card, js) }

	eventually(t, "the console to say what adapt decided", func() (bool, string) {
		shopper.place("/") // the shop keeps answering, so each period has something to read
		got, err := tryEval[string](b, inCard(`var e=c.querySelector(".adapt-now");return e.hidden?"hidden":e.textContent`))
		return err == nil && strings.HasPrefix(got, "Adaptive capacity: held: ") && strings.Contains(got, "target p90 1s, errors 5%, 2–50"), got
	})
	eventually(t, "the capacity, the shop's p90 and the target to have points from the server's history", func() (bool, string) {
		shopper.place("/")
		got, err := tryEval[[]float64](b, inCard(`return [c.querySelectorAll(".chart-cap .point").length,
			c.querySelectorAll(".chart-shop .l-shop.point").length, c.querySelectorAll(".chart-shop .l-target.point").length]`))
		return err == nil && len(got) == 3 && got[0] >= 1 && got[1] >= 1 && got[2] >= 1, fmt.Sprint(got, err)
	})
	if got := eval[string](b, inCard(`return c.querySelector(".cap-now").textContent`)); got != "set by adapt (configured 5)" {
		t.Fatalf("the capacity row says %q, want it set by adapt", got)
	}
}
