package caddytest

import (
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"
)

// BenchmarkHTTPAdmittedSessionMax drives one real Caddy with wrk: the same admitted
// visitor's request, bare, behind a room, and behind a room with session_max, in
// interleaved rounds that rotate the order; the medians and the ratios are reported. session_max is decided
// from the cookie, so the two rooms must serve alike.
//
//	cd caddytest && go test -run '^$' -bench HTTPAdmittedSessionMax -benchtime 1x .
func BenchmarkHTTPAdmittedSessionMax(b *testing.B) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		b.Skip("wrk is not installed (apt-get install wrk)")
	}
	const (
		rounds   = 6
		duration = "3s"
	)
	tester := caddytest.NewTester(b)
	tester.InitServer(liveGlobals("\tlog {\n\t\tlevel ERROR\n\t}\n")+`
http://localhost:9081 {
	respond "ok"
}
http://localhost:9082 {
	waiting_room {
		name bench_plain
		capacity 1000000000
	}
	respond "ok"
}
http://localhost:9083 {
	waiting_room {
		name bench_session_max
		capacity 1000000000
		session_max 1h
	}
	respond "ok"
}
`, "caddyfile")
	cookieOf := func(base string) string {
		jar, _ := cookiejar.New(nil)
		resp, err := (&http.Client{Jar: jar}).Get(base)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		u, _ := url.Parse(base)
		cs := jar.Cookies(u)
		if len(cs) != 1 {
			b.Fatalf("expected the room's cookie from %s, got %v", base, cs)
		}
		return cs[0].Name + "=" + cs[0].Value
	}
	plainCookie, timedCookie := cookieOf("http://localhost:9082/"), cookieOf("http://localhost:9083/")
	requests := 0
	run := func(target, cookie string) float64 {
		b.Helper()
		out, err := exec.Command(wrk, "-t1", "-c50", "-d"+duration, target, "-H", "Cookie: "+cookie).CombinedOutput()
		if err != nil {
			b.Fatalf("wrk: %v\n%s", err, out)
		}
		m := regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`).FindSubmatch(out)
		if m == nil || regexp.MustCompile(`Non-2xx`).Match(out) {
			b.Fatalf("wrk saw errors or no rate:\n%s", out)
		}
		requests++
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		return v
	}
	var bare, plain, timed []float64
	run("http://localhost:9081/", plainCookie) // warm up
	for i := range rounds {
		// Each round starts with a different site, so noise that follows the order
		// (a neighbour's periodic job) is spread over all three.
		for k := range 3 {
			switch (i + k) % 3 {
			case 0:
				bare = append(bare, run("http://localhost:9081/", plainCookie))
			case 1:
				plain = append(plain, run("http://localhost:9082/", plainCookie))
			case 2:
				timed = append(timed, run("http://localhost:9083/", timedCookie))
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if requests != 1+3*rounds {
		b.Fatalf("%d wrk runs, want %d", requests, 1+3*rounds)
	}
	med := func(v []float64) float64 { v = slices.Clone(v); slices.Sort(v); return v[len(v)/2] }
	mb, mp, mt := med(bare), med(plain), med(timed)
	b.ReportMetric(mp/mb, "admitted_ratio")
	b.ReportMetric(mt/mb, "admitted_session_max_ratio")
	b.ReportMetric(mt/mp, "session_max_vs_plain")
	fmt.Printf("bare %v\nadmitted %v\nadmitted with session_max %v\n", bare, plain, timed)
}
