package caddytest

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddytest"
)

// roomFamilies are the metric families every room exports a series in, from the moment
// it is provisioned (a histogram as its _bucket, _sum and _count).
var roomFamilies = []string{
	"caddy_waiting_room_active",
	"caddy_waiting_room_waiting",
	"caddy_waiting_room_away",
	"caddy_waiting_room_capacity",
	"caddy_waiting_room_admitted_total",
	"caddy_waiting_room_queued_total",
	"caddy_waiting_room_abandoned_total",
	"caddy_waiting_room_wait_seconds",
	"caddy_waiting_room_upstream_ttfb_seconds",
	"caddy_waiting_room_upstream_failed_total",
	"caddy_waiting_room_adapt_latency_target_seconds",
	"caddy_waiting_room_no_shows_total",
	"caddy_waiting_room_handoffs_total",
	"caddy_waiting_room_admitted_by_reason_total",
}

// roomSeries lists the families in which /metrics has a series of the room.
func roomSeries(t *testing.T, room string) []string {
	t.Helper()
	_, body := admin(t, http.MethodGet, "/metrics", "")
	re := regexp.MustCompile(`(?m)^(caddy_waiting_room_\w+)\{[^}]*room="` + regexp.QuoteMeta(room) + `"[^}]*\} `)
	var families []string
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		f := m[1]
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if s, ok := strings.CutSuffix(f, suffix); ok && (s == "caddy_waiting_room_wait_seconds" || s == "caddy_waiting_room_upstream_ttfb_seconds") {
				f = s
			}
		}
		if !slices.Contains(families, f) {
			families = append(families, f)
		}
	}
	slices.Sort(families)
	return families
}

// twoRoomsConfig is one site with a room under /a/ and, when b is not empty, another
// under /b/.
func twoRoomsConfig(a, b string) string {
	site := fmt.Sprintf("\twaiting_room /a/* {\n\t\tname %s\n\t\tcapacity 10\n\t}\n", a)
	if b != "" {
		site += fmt.Sprintf("\twaiting_room /b/* {\n\t\tname %s\n\t\tcapacity 10\n\t}\n", b)
	}
	return liveGlobals("") + fmt.Sprintf("\nhttp://localhost:%d {\n%s\trespond \"upstream {path}\"\n}\n", livePort, site)
}

// A room taken out of the config stops exporting its last values: every series of it
// is gone from /metrics after the reload, while the room that stays keeps its series,
// its counters carried over.
func TestMetricsOfRemovedRoomGo(t *testing.T) {
	kept, dropped := uniqueRoom(t), uniqueRoom(t)
	tester := caddytest.NewTester(t)
	tester.InitServer(twoRoomsConfig(kept, dropped), "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	if _, admitted := newVisitor(t).place("/a/"); !admitted {
		t.Fatalf("the visitor of room %s was not admitted with capacity 10", kept)
	}
	if _, admitted := newVisitor(t).place("/b/"); !admitted {
		t.Fatalf("the visitor of room %s was not admitted with capacity 10", dropped)
	}
	want := slices.Sorted(slices.Values(roomFamilies))
	for _, room := range []string{kept, dropped} {
		if got := roomSeries(t, room); !slices.Equal(got, want) {
			t.Fatalf("room %s exports series in %v, want %v", room, got, want)
		}
		if a := metricValue(t, "caddy_waiting_room_admitted_total", room); a != 1 {
			t.Fatalf("admitted_total of room %s is %v, want 1", room, a)
		}
	}

	tester.InitServer(twoRoomsConfig(kept, ""), "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	eventually(t, "the removed room's series to go", func() (bool, string) {
		got := roomSeries(t, dropped)
		return len(got) == 0, fmt.Sprint(got)
	})
	if got := roomSeries(t, kept); !slices.Equal(got, want) {
		t.Fatalf("after the reload the kept room %s exports series in %v, want %v", kept, got, want)
	}
	if a := metricValue(t, "caddy_waiting_room_admitted_total", kept); a != 1 {
		t.Fatalf("admitted_total of the kept room after the reload is %v, want 1 (carried over)", a)
	}
	if code, _, body := newVisitor(t).get("/b/", ""); code != http.StatusOK || body != "upstream /b/" {
		t.Fatalf("GET /b/ after the room left: %d %q, want the upstream", code, body)
	}
}
