package caddytest

import (
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// BenchmarkMultiProofOfWorkServerCPU measures what new visitors cost one Caddy process
// with `proof_of_work 16`, server side only: the CPU the Caddy process spends per
// request (its threads' schedstat, in nanoseconds), so neither the client's load nor
// the proofs' solving (done before the clock starts) counts, and a noisy shared
// machine changes little. In one run, interleaved: a site outside every room (bare),
// a room without proof_of_work (each request a new visitor), the proof_of_work room
// with a valid proof on each request, and the same room without one (the challenge a
// bot that does no work gets). Every answer is checked.
//
//	cd caddytest && go test -run '^$' -bench MultiProofOfWorkServerCPU -benchtime 1x .
func BenchmarkMultiProofOfWorkServerCPU(b *testing.B) {
	const (
		rounds  = 3
		perRun  = 2000
		workers = 16
		bits    = 16
		secret  = "bench-proof-of-work-secret-of-32-bytes"
	)
	room := fmt.Sprintf("powbench%d", time.Now().UnixNano()%1e6)
	f := startFleet(b, 1, func(int) string {
		return roomBlock("plain"+room, "/plain*", 1000000000, "memory") +
			roomBlock(room, "/pow*", 1000000000, "memory", "secret "+secret, "proof_of_work "+strconv.Itoa(bits))
	})
	nd := f.nodes[0]

	keys := token.NewKeyring(room, [][]byte{[]byte(secret)})
	proofs := make([]string, rounds*perRun)
	solveStart := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 0, token.MaxProof)
			for i := next.Add(1) - 1; i < int64(len(proofs)); i = next.Add(1) - 1 {
				c := keys.MintChallenge(bits, time.Now())
				for n := 0; ; n++ {
					buf = strconv.AppendInt(append(append(buf[:0], c...), ':'), int64(n), 10)
					if sum := sha256.Sum256(buf); token.LeadingZeroBits(sum[:]) >= bits {
						proofs[i] = string(buf)
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	b.Logf("solved %d proofs of %d bits in %v (Go, %d cores)", len(proofs), bits, time.Since(solveStart), runtime.GOMAXPROCS(0))

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers, MaxConnsPerHost: workers}}
	// run sends n requests for path, the i-th with proof(i) in the header, checks each
	// answer and returns the Caddy process's CPU nanoseconds per request.
	run := func(path string, n int, proof func(i int) string, want string) float64 {
		b.Helper()
		var at, bad atomic.Int64
		var firstBad atomic.Value
		var wg sync.WaitGroup
		before := processCPU(b, nd.cmd.Process.Pid)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := at.Add(1) - 1; i < int64(n); i = at.Add(1) - 1 {
					req, _ := http.NewRequest(http.MethodGet, nd.base+path, nil)
					req.Header.Set("Accept", "application/json")
					req.Header.Set("Waiting-Room-Proof", proof(int(i)))
					resp, err := client.Do(req)
					if err != nil {
						bad.Add(1)
						firstBad.CompareAndSwap(nil, err.Error())
						continue
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
						bad.Add(1)
						firstBad.CompareAndSwap(nil, fmt.Sprintf("%d %s", resp.StatusCode, body))
					}
				}
			}()
		}
		wg.Wait()
		cpu := processCPU(b, nd.cmd.Process.Pid) - before
		if bad.Load() > 0 {
			b.Fatalf("%s: %d of %d answers wrong, the first: %v", path, bad.Load(), n, firstBad.Load())
		}
		return float64(cpu) / float64(n)
	}
	// Every request carries a proof-sized header, so the baseline is the same request.
	sameSize := func(int) string { return proofs[0] }
	run("/healthz", perRun, sameSize, "ok") // warm up
	var bare, plain, proven, challenged []float64
	for r := range rounds {
		bare = append(bare, run("/healthz", perRun, sameSize, "ok"))
		plain = append(plain, run("/plain", perRun, sameSize, "upstream /plain"))
		proven = append(proven, run("/pow", perRun, func(i int) string { return proofs[r*perRun+i] }, "upstream /pow"))
		challenged = append(challenged, run("/pow", perRun, func(int) string { return "" }, `"status":"challenge"`))
	}
	mb, mp, mv, mc := median(bare), median(plain), median(proven), median(challenged)
	b.ReportMetric(mb, "bare_cpu_ns/req")
	b.ReportMetric(mp, "new_visitor_cpu_ns/req")
	b.ReportMetric(mv, "proof_cpu_ns/req")
	b.ReportMetric(mc, "challenge_cpu_ns/req")
	// As throughput on a CPU-bound server: bare's CPU per request over theirs.
	b.ReportMetric(mb/mp, "new_visitor_ratio")
	b.ReportMetric(mb/mv, "proof_ratio")
	b.ReportMetric(mb/mc, "challenge_ratio")
	fmt.Printf("server CPU ns per request: bare %.0f; new visitor %.0f; new visitor with a proof (%d bits) %.0f; challenged %.0f\n",
		bare, plain, bits, proven, challenged)
}

// processCPU is the CPU time, in nanoseconds, that every thread of process pid has
// run for (the first field of each /proc/<pid>/task/<tid>/schedstat).
func processCPU(b *testing.B, pid int) int64 {
	b.Helper()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		b.Fatalf("reading the threads of %d: %v", pid, err)
	}
	var total int64
	for _, p := range tasks {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue // a thread that just exited
		}
		field, _, _ := strings.Cut(string(raw), " ")
		ns, _ := strconv.ParseInt(field, 10, 64)
		total += ns
	}
	return total
}
