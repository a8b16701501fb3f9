package caddytest

import (
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os/exec"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"
)

// BenchmarkHTTPRoomVsBare drives one real Caddy with wrk and compares, in the same run,
// three sites that answer the same "ok": bare, behind a waiting room with an admitted
// cookie, and behind a waiting room where every request is a new visitor (admitted at
// once: join, sign, Set-Cookie). The rounds are interleaved so machine noise hits all
// three alike; the medians and their ratios to bare are reported.
//
//	cd caddytest && go test -run '^$' -bench HTTPRoomVsBare -benchtime 1x .
//
// It runs once whatever b.N is: wrk decides how many requests fit in each round.
func BenchmarkHTTPRoomVsBare(b *testing.B) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		b.Skip("wrk is not installed (apt-get install wrk)")
	}
	const (
		rounds   = 3
		duration = "5s"
	)
	tester := caddytest.NewTester(b)
	tester.InitServer(liveGlobals("")+`
http://localhost:9081 {
	respond "ok"
}
http://localhost:9082 {
	waiting_room {
		name bench_admitted
		capacity 1000000000
	}
	respond "ok"
}
http://localhost:9083 {
	waiting_room {
		name bench_new
		capacity 1000000000
	}
	respond "ok"
}
`, "caddyfile")

	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	resp, err := client.Get("http://localhost:9082/")
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	u, _ := url.Parse("http://localhost:9082/")
	cookies := jar.Cookies(u)
	if len(cookies) != 1 {
		b.Fatalf("expected the room's cookie, got %v", cookies)
	}
	cookie := cookies[0].Name + "=" + cookies[0].Value

	run := func(target string, args ...string) float64 {
		b.Helper()
		return wrkRate(b, wrk, duration, target, args...)
	}
	var bare, admitted, fresh []float64
	run("http://localhost:9081/") // warm up
	for i := 0; i < rounds; i++ {
		// The bare site gets the same Cookie header: the baseline is the same request
		// without the room, not a smaller request.
		bare = append(bare, run("http://localhost:9081/", "-H", "Cookie: "+cookie))
		admitted = append(admitted, run("http://localhost:9082/", "-H", "Cookie: "+cookie))
		fresh = append(fresh, run("http://localhost:9083/"))
		time.Sleep(200 * time.Millisecond)
	}
	mb, ma, mf := median(bare), median(admitted), median(fresh)
	b.ReportMetric(mb, "bare_req/s")
	b.ReportMetric(ma, "admitted_req/s")
	b.ReportMetric(mf, "new_visitor_req/s")
	b.ReportMetric(ma/mb, "admitted_ratio")
	b.ReportMetric(mf/mb, "new_visitor_ratio")
	fmt.Printf("bare %v\nadmitted %v\nnew visitors %v\n", bare, admitted, fresh)
}
