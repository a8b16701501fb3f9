package caddytest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// The figures of the Redis store through a real caddy process (the binary the fleet
// tests build). Each benchmark runs once whatever b.N is:
//
//	cd caddytest && go test -run '^$' -bench MultiRedis -benchtime 1x .

// benchInstance is one caddy on its own Redis with the rooms the benchmarks use;
// /healthz on the same site is the bare Caddy they are compared with.
func benchInstance(b *testing.B) (*testredis.Server, *node) {
	srv := testredis.Start(b)
	store := "redis redis://" + srv.Addr
	f := startFleet(b, 1, func(int) string {
		return roomBlock("bench_new", "/new*", 1_000_000_000, store, "session_ttl 1h") +
			roomBlock("bench_queued", "/queued*", 1, store, "session_ttl 1h", "queue_ttl 1h") +
			roomBlock("bench_admitted", "/admitted*", 1_000_000_000, store, "session_ttl 1h") +
			roomBlock("bench_positions", "/positions*", 1, store, "session_ttl 1h", "queue_ttl 1h")
	})
	return srv, f.nodes[0]
}

// BenchmarkMultiRedisHTTPNewVisitors drives one caddy on Redis with wrk, every request a
// new visitor, against /healthz of the same site (bare Caddy) in interleaved rounds:
// new visitors admitted at once (one join, a signed cookie) and new visitors queued (one
// join, a cookie and the waiting page). It reports requests per second, the ratio to
// bare, and the Redis commands per join.
func BenchmarkMultiRedisHTTPNewVisitors(b *testing.B) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		b.Skip("wrk is not installed (apt-get install wrk)")
	}
	srv, nd := benchInstance(b)
	if _, ok, err := newGuest().place(nd.base, "/queued"); err != nil || !ok {
		b.Fatalf("holder of the queued room's only slot: %v", err)
	}
	run := func(path string) (rps float64, requests int64) {
		b.Helper()
		out, err := exec.Command(wrk, "-t1", "-c50", "-d4s", nd.base+path).CombinedOutput()
		if err != nil {
			b.Fatalf("wrk: %v\n%s", err, out)
		}
		m := regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`).FindSubmatch(out)
		n := regexp.MustCompile(`(\d+) requests in`).FindSubmatch(out)
		if m == nil || n == nil || regexp.MustCompile(`Non-2xx|Socket errors`).Match(out) {
			b.Fatalf("wrk output:\n%s", out)
		}
		rps, _ = strconv.ParseFloat(string(m[1]), 64)
		requests, _ = strconv.ParseInt(string(n[1]), 10, 64)
		return rps, requests
	}
	perJoin := func(path string) (rps, scripts, total float64) {
		s0, t0 := srv.Commands(b)
		rps, n := run(path)
		s1, t1 := srv.Commands(b)
		return rps, float64(s1-s0) / float64(n), float64(t1-t0) / float64(n)
	}
	run("/healthz") // warm up
	var bare, admitted, queued []float64
	var admScripts, admTotal, qScripts, qTotal float64
	for range 3 {
		r, _ := run("/healthz")
		bare = append(bare, r)
		r, admScripts, admTotal = perJoin("/new")
		admitted = append(admitted, r)
		r, qScripts, qTotal = perJoin("/queued")
		queued = append(queued, r)
	}
	mb, ma, mq := median(bare), median(admitted), median(queued)
	b.ReportMetric(mb, "bare_req/s")
	b.ReportMetric(ma, "new_admitted_req/s")
	b.ReportMetric(mq, "new_queued_req/s")
	b.ReportMetric(ma/mb, "new_admitted_ratio")
	b.ReportMetric(mq/mb, "new_queued_ratio")
	b.ReportMetric(admScripts, "evalsha/admitted_join")
	b.ReportMetric(admTotal, "redis_cmds/admitted_join")
	b.ReportMetric(qScripts, "evalsha/queued_join")
	b.ReportMetric(qTotal, "redis_cmds/queued_join")
	fmt.Printf("bare %v\nnew admitted %v\nnew queued %v\n", bare, admitted, queued)
}

// BenchmarkMultiRedisCommandsPerAdmittedRequest sends requests of 1000 admitted visitors,
// round robin from 50 connections, for a few seconds and reports the Redis commands per
// request (the throttled touch: at most one per visitor per 5 s), next to the commands
// an idle instance runs per second (the admission loop's step and counters).
func BenchmarkMultiRedisCommandsPerAdmittedRequest(b *testing.B) {
	srv, nd := benchInstance(b)
	const visitors, conns = 1000, 50
	cookies := make([]string, visitors)
	for i := range cookies {
		g := newGuest()
		if _, ok, err := g.place(nd.base, "/admitted"); err != nil || !ok {
			b.Fatalf("visitor %d not admitted: %v", i, err)
		}
		cookies[i] = "waiting_room_bench_admitted=" + g.cookie(nd.base, "bench_admitted")
	}
	idleScripts, idleTotal, idle := idleRate(b, srv, 2*time.Second)

	s0, t0 := srv.Commands(b)
	start := time.Now()
	var next, requests atomic.Int64
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Transport: fleetTransport}
			for time.Since(start) < 6*time.Second {
				req, _ := http.NewRequest(http.MethodGet, nd.base+"/admitted", nil)
				req.Header.Set("Cookie", cookies[next.Add(1)%visitors])
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !strings.HasPrefix(string(body), "upstream ") {
					b.Errorf("admitted visitor stopped: %q", body)
					return
				}
				requests.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	s1, t1 := srv.Commands(b)
	n := float64(requests.Load())
	b.ReportMetric(n/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(s1-s0)/n, "evalsha/req")
	b.ReportMetric(float64(t1-t0)/n, "redis_cmds/req")
	b.ReportMetric((float64(s1-s0)-idleScripts*elapsed.Seconds())/n, "evalsha/req_minus_idle")
	b.ReportMetric(idleScripts, "idle_evalsha/s")
	b.ReportMetric(idleTotal, "idle_redis_cmds/s")
	fmt.Printf("%v requests of %d admitted visitors in %v; idle baseline measured over %v\n", n, visitors, elapsed, idle)
}

// idleRate measures the commands per second Redis runs while nobody makes a request.
func idleRate(b *testing.B, srv *testredis.Server, d time.Duration) (scripts, total float64, took time.Duration) {
	s0, t0 := srv.Commands(b)
	start := time.Now()
	time.Sleep(d)
	s1, t1 := srv.Commands(b)
	took = time.Since(start)
	return float64(s1-s0) / took.Seconds(), float64(t1-t0) / took.Seconds(), took
}

// BenchmarkMultiRedisCommandsPerPositionTick connects 10, 100 and 1000 waiters by
// WebSocket to one instance and reports the Redis commands per second while they wait:
// the hub computes every local waiter's position with one call per round, so the
// figure must not grow with the number of waiters.
func BenchmarkMultiRedisCommandsPerPositionTick(b *testing.B) {
	srv, nd := benchInstance(b)
	if _, ok, err := newGuest().place(nd.base, "/positions"); err != nil || !ok {
		b.Fatalf("holder of the only slot: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var messages atomic.Int64
	connected := 0
	for _, n := range []int{0, 10, 100, 1000} {
		for ; connected < n; connected++ {
			g := newGuest()
			if _, ok, err := g.place(nd.base, "/positions"); err != nil || ok {
				b.Fatalf("waiter %d: admitted=%v %v", connected, ok, err)
			}
			ws, err := g.socket(ctx, nd.base, "/positions")
			if err != nil {
				b.Fatal(err)
			}
			defer ws.CloseNow()
			go func() {
				for {
					if _, _, err := ws.Read(ctx); err != nil {
						return
					}
					messages.Add(1)
				}
			}()
		}
		time.Sleep(time.Second) // the joins' own commands are over
		m0 := messages.Load()
		scripts, total, took := idleRate(b, srv, 5*time.Second)
		got := float64(messages.Load()-m0) / took.Seconds()
		b.ReportMetric(scripts, fmt.Sprintf("evalsha/s_%d_waiters", n))
		b.ReportMetric(total, fmt.Sprintf("redis_cmds/s_%d_waiters", n))
		fmt.Printf("%4d waiters: %.1f EVALSHA/s, %.1f Redis commands/s, %.1f messages/s pushed\n", n, scripts, total, got)
	}
}
