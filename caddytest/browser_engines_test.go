package caddytest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The waiting page's core scenario in every engine, over HTTP and over HTTPS: queued
// at the right number, the leave button, back in line at the end, a live update
// without a reload, and a turn that comes while the tab is hidden and takes the
// visitor to the URL first asked for. A console error, an uncaught exception or a
// CSP violation fails it.
func TestEnginesWaitingPage(t *testing.T) {
	for _, e := range engines {
		for _, base := range []string{liveBase, liveTLSBase} {
			t.Run(e.name+"/"+strings.Split(base, ":")[0], func(t *testing.T) {
				enginesScenario(t, e.start(t, engineOptions{}), base)
			})
		}
	}
}

func enginesScenario(t *testing.T, p enginePage, base string) {
	up, reports := startEngineSite(t, uniqueRoom(t), "capacity 1")
	buyer := newVisitor(t)
	if _, in := buyer.place("/"); !in {
		t.Fatal("the first visitor was queued")
	}
	var waiters []*visitor
	for i := range 2 {
		v := newVisitor(t)
		if q, in := v.place("/"); in || q.Position != i+1 {
			t.Fatalf("waiter %d: admitted %v at %d", i+1, in, q.Position)
		}
		waiters = append(waiters, v)
	}
	const uri = "/tickets/7?seat=B4"
	p.navigate(base + uri)
	engineShowing(t, p, "wr-position", "3")
	behind := newVisitor(t)
	if q, in := behind.place("/"); in || q.Position != 4 {
		t.Fatalf("the waiter behind: admitted %v at %d", in, q.Position)
	}

	// "Notify me": the page says something at once, whatever the browser does with
	// its question, and nothing below the button moves.
	leaveTop := engineEval[float64](t, p, `document.getElementById("wr-leave").getBoundingClientRect().top + scrollY`)
	engineEval[bool](t, p, `(document.getElementById("wr-notify").click(), true)`)
	told := engineEval[string](t, p, `document.getElementById("wr-alert").textContent`)
	if !slices.Contains([]string{
		"Your browser is asking whether this page may notify you.",
		"You'll get a notification and a sound when it's your turn.",
		"You'll hear a sound when it's your turn.",
	}, told) {
		t.Errorf("%s: after \"Notify me\" the page says %q", p.name(), told)
	}
	if got := engineEval[float64](t, p, `document.getElementById("wr-leave").getBoundingClientRect().top + scrollY`); got != leaveTop {
		t.Errorf("%s: \"Notify me\" moved the leave button from y=%v to y=%v", p.name(), leaveTop, got)
	}
	t.Logf("%s: after \"Notify me\": %q", p.name(), told)

	// "Leave the queue", "Yes, leave": the page says so, and the one behind moves up.
	engineEval[bool](t, p, `(document.getElementById("wr-leave").click(), document.getElementById("wr-leave-yes").click(), true)`)
	eventually(t, p.name()+": the page to say the visitor left", func() (bool, string) {
		raw, err := p.evalJSON(`!document.getElementById("wr-left").hidden`)
		return err == nil && string(raw) == "true", fmt.Sprintf("%s (%v)", raw, err)
	})
	eventually(t, "the waiter behind to move up", func() (bool, string) {
		q, _ := behind.place("/")
		return q.Position == 3, fmt.Sprint(q.Position)
	})

	// Back in line, at the end; the next numbers come without a reload.
	p.navigate(base + uri)
	engineShowing(t, p, "wr-position", "4")
	engineEval[bool](t, p, `(window.__wrMarker = "first", true)`)
	waiters[0].leave()
	engineShowing(t, p, "wr-position", "3")
	if got := engineEval[string](t, p, `String(window.__wrMarker)`); got != "first" {
		t.Fatalf("%s: the page was reloaded to show its new number", p.name())
	}
	// The page loaded with its numbers and the socket told the next: it had no
	// reason to poll.
	if got := engineEval[int](t, p, pagePolls); got != 0 {
		t.Errorf("%s: the page polled %d times as it loaded and was told one move", p.name(), got)
	}

	// The turn comes while the tab is hidden: the page asks for the site at once, or
	// says so in its title for when it is shown.
	p.setHidden(true)
	eventually(t, p.name()+": the page to be hidden", func() (bool, string) {
		raw, err := p.evalJSON(`document.visibilityState`)
		return err == nil && string(raw) == `"hidden"`, fmt.Sprintf("%s (%v)", raw, err)
	})
	waiters[1].leave()
	behind.leave()
	buyer.get("/checkout", "")
	var navigated bool
	eventually(t, p.name()+": the hidden tab to take its turn", func() (bool, string) {
		if len(up.requests(uri)) > 0 {
			navigated = true
			return true, ""
		}
		raw, err := p.evalJSON(`document.title`)
		return err == nil && strings.HasPrefix(string(raw), `"It's your turn!`), fmt.Sprintf("title %s (%v)", raw, err)
	})
	t.Logf("%s: the hidden tab went to the site before it was shown: %v", p.name(), navigated)
	p.setHidden(false)
	engineLandedOn(t, p, base, uri)
	if got := up.requests(uri); !slices.Equal(got, []string{"GET " + uri}) {
		t.Errorf("the upstream saw %q", got)
	}
	if got := p.problems(); len(got) > 0 {
		t.Errorf("%s reported errors:\n\t%s", p.name(), strings.Join(got, "\n\t"))
	}
	if got := reports.all(); len(got) > 0 {
		t.Errorf("%s reported CSP violations:\n\t%s", p.name(), strings.Join(got, "\n\t"))
	}
}

// Without JavaScript the page refreshes itself (<meta refresh> in <noscript>) and so
// lets the visitor in once a slot frees, in every engine. Nothing is read from the
// page (WebDriver runs its scripts in the page, which has none): the upstream tells.
func TestEnginesWithoutJavaScript(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			p := e.start(t, engineOptions{noScripts: true})
			up, reports := startEngineSite(t, uniqueRoom(t), "capacity 1")
			buyer := newVisitor(t)
			if _, in := buyer.place("/"); !in {
				t.Fatal("the first visitor was queued")
			}
			const uri = "/events/9?day=sat"
			p.navigate(liveBase + uri)
			if got := up.requests(uri); len(got) != 0 {
				t.Fatalf("the upstream saw %q while the room was full", got)
			}
			buyer.get("/checkout", "")
			eventually(t, p.name()+": the page to refresh itself into the site", func() (bool, string) {
				got := up.requests(uri)
				return len(got) > 0, fmt.Sprint(got)
			})
			if got := up.requests(uri); !slices.Equal(got, []string{"GET " + uri}) {
				t.Errorf("the upstream saw %q", got)
			}
			if got := reports.all(); len(got) > 0 {
				t.Errorf("%s reported CSP violations:\n\t%s", p.name(), strings.Join(got, "\n\t"))
			}
		})
	}
}

// pagePolls counts the page's JSON polls: fetch()es of its own URL. The socket is not
// a resource entry.
const pagePolls = `performance.getEntriesByType("resource").filter(function(e){return e.initiatorType==="fetch"}).length`
