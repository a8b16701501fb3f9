package caddytest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"
)

// BenchmarkHTTPAdmittedSettings drives one real Caddy with wrk: the same admitted
// visitor's request, bare, behind a room, and behind rooms with each setting that
// decides who gets in (session_max, proof_of_work 16, a pass bound into the cookie),
// in interleaved rounds that rotate the order; the medians, and the medians of the
// ratios within a round, are reported. None of the settings may cost an admitted
// visitor anything: session_max is decided from the cookie, the proof is looked for
// with one substring search, the pass is a bit in the cookie.
//
//	cd caddytest && go test -run '^$' -bench HTTPAdmittedSettings -benchtime 1x .
func BenchmarkHTTPAdmittedSettings(b *testing.B) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		b.Skip("wrk is not installed (apt-get install wrk)")
	}
	const (
		rounds   = 6
		duration = "3s"
	)
	site := func(port int, name string, extra ...string) string {
		return fmt.Sprintf("http://localhost:%d {\n\twaiting_room {\n\t\tname %s\n\t\tcapacity 1000000000\n\t\t%s\n\t}\n\trespond \"ok\"\n}\n",
			port, name, strings.Join(extra, "\n\t\t"))
	}
	tester := caddytest.NewTester(b)
	tester.InitServer(liveGlobals("")+"http://localhost:9081 {\n\trespond \"ok\"\n}\n"+
		site(9082, "bench_plain")+site(9083, "bench_session_max", "session_max 1h")+
		site(9084, "bench_proof", "proof_of_work 16")+site(9085, "bench_pass"), "caddyfile")

	// cookieOf is the room's cookie of a visitor admitted at base, sent with header.
	cookieOf := func(base string, header http.Header) string {
		jar, _ := cookiejar.New(nil)
		req, _ := http.NewRequest(http.MethodGet, base, nil)
		req.Header = header
		resp, err := (&http.Client{Jar: jar}).Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		u, _ := url.Parse(base)
		cs := jar.Cookies(u)
		if len(cs) != 1 || string(body) != "ok" {
			b.Fatalf("expected an admitted visitor's cookie from %s, got %v and %q", base, cs, body)
		}
		return cs[0].Name + "=" + cs[0].Value
	}
	proofCookie := func() string {
		_, c, err := askWithProof("http://localhost:9084", "/", "")
		if err != nil || c.Challenge == "" {
			b.Fatalf("no challenge from the proof room: %+v %v", c, err)
		}
		return cookieOf("http://localhost:9084/", http.Header{"Waiting-Room-Proof": {solveChallenge(b, c)}})
	}
	passCookie := func() string {
		resp, err := http.Post(adminBase+"/waiting_room/bench_pass/passes", "application/json", strings.NewReader(`{}`))
		if err != nil {
			b.Fatal(err)
		}
		var minted struct{ Passes []string }
		err = json.NewDecoder(resp.Body).Decode(&minted)
		resp.Body.Close()
		if err != nil || len(minted.Passes) != 1 {
			b.Fatalf("minting a pass: %d %v %v", resp.StatusCode, minted, err)
		}
		return cookieOf("http://localhost:9085/", http.Header{"Waiting-Room-Pass": {minted.Passes[0]}})
	}
	targets := []struct {
		name, url, cookie string
		rates             []float64
	}{
		{"bare", "http://localhost:9081/", "", nil},
		{"admitted", "http://localhost:9082/", cookieOf("http://localhost:9082/", http.Header{}), nil},
		{"session_max", "http://localhost:9083/", cookieOf("http://localhost:9083/", http.Header{}), nil},
		{"proof_of_work", "http://localhost:9084/", proofCookie(), nil},
		{"pass", "http://localhost:9085/", passCookie(), nil},
	}
	requests := 0
	run := func(target, cookie string) float64 {
		b.Helper()
		requests++
		if cookie == "" {
			return wrkRate(b, wrk, duration, target)
		}
		return wrkRate(b, wrk, duration, target, "-H", "Cookie: "+cookie)
	}
	run(targets[1].url, targets[1].cookie) // warm up
	for i := range rounds {
		// Each round starts with a different site, so noise that follows the order
		// (a neighbour's periodic job) is spread over all of them.
		for k := range targets {
			t := &targets[(i+k)%len(targets)]
			t.rates = append(t.rates, run(t.url, t.cookie))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if requests != 1+len(targets)*rounds {
		b.Fatalf("%d wrk runs, want %d", requests, 1+len(targets)*rounds)
	}
	// Ratios are taken within each round, then their median: the machine's load drifts
	// between rounds far more than within one.
	ratio := func(a, b []float64) float64 {
		r := make([]float64, len(a))
		for i := range a {
			r[i] = a[i] / b[i]
		}
		return median(r)
	}
	b.ReportMetric(ratio(targets[1].rates, targets[0].rates), "admitted_ratio")
	for _, t := range targets[2:] {
		b.ReportMetric(ratio(t.rates, targets[1].rates), t.name+"_vs_admitted")
	}
	for _, t := range targets {
		fmt.Printf("%s %.0f req/s (median of %v)\n", t.name, median(t.rates), t.rates)
	}
}
