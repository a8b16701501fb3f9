package redisstore

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// outageChild, set in the environment, makes TestOutageGoRedisLinesFew the child
// process that lives through the outage.
const outageChild = "WAITING_ROOM_GO_REDIS_LOG_CHILD"

// goRedisLine is a line of go-redis's default logger: its "redis: " prefix, the date
// and time, file:line. A logger the store had set (Caddy's, a quiet one, a void one)
// prints nothing like it.
var goRedisLine = regexp.MustCompile(`^redis: \d{4}/\d\d/\d\d \d\d:\d\d:\d\d [\w.-]+\.go:\d+: `)

// The store leaves go-redis's process-wide logger alone, so another Redis client in the
// same Caddy keeps the logger it chose, and an outage still does not flood stderr:
// 50 callers for 2 s against a Redis that went away make a handful of go-redis lines,
// not one per call. The outage runs in a child process because go-redis's default
// logger writes to the process's stderr, which only a parent can read.
func TestOutageGoRedisLinesFew(t *testing.T) {
	if os.Getenv(outageChild) != "" {
		outageCalls(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestOutageGoRedisLinesFew$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), outageChild+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if strings.Contains(stdout.String(), "--- SKIP") {
		t.Skipf("the child skipped:\n%s", stdout.String())
	}
	if err != nil {
		t.Fatalf("child: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	var lines []string
	for line := range strings.Lines(stderr.String()) {
		if goRedisLine.MatchString(line) {
			lines = append(lines, strings.TrimSpace(line))
		}
	}
	t.Logf("go-redis wrote %d lines during the outage:\n%s", len(lines), strings.Join(lines, "\n"))
	if len(lines) == 0 {
		t.Fatalf("go-redis's default logger wrote nothing to stderr during an outage: the store "+
			"replaced go-redis's process-wide logger. The child's stderr:\n%s", stderr.String())
	}
	// A line per failed dial until pool_size have failed in a row, then silence but for
	// the dials already under way then (at most pool_size-1 more).
	if len(lines) > 2*outagePoolSize-1 {
		t.Fatalf("%d go-redis lines for one outage with pool_size %d: they grow with the calls", len(lines), outagePoolSize)
	}
}

const outagePoolSize = 4

// outageCalls is the child: a store on a real Redis, then Redis stops and 50 callers
// keep calling for 2 s.
func outageCalls(t *testing.T) {
	srv := testredis.Start(t)
	const timeout = 200 * time.Millisecond
	mod := provision(t, &Redis{
		URL: "redis://" + srv.Addr, Timeout: caddy.Duration(timeout), DialTimeout: caddy.Duration(timeout),
		PoolSize: outagePoolSize,
	})
	s := open(t, mod)
	ctx := context.Background()
	if _, err := s.Stats(ctx); err != nil {
		t.Fatalf("Stats with Redis up: %v", err)
	}
	srv.Stop()
	var calls, failed int
	var mu sync.Mutex
	var wg sync.WaitGroup
	end := time.Now().Add(2 * time.Second)
	for range 50 {
		wg.Go(func() {
			for time.Now().Before(end) {
				_, err := s.Stats(ctx)
				mu.Lock()
				calls++
				if err != nil {
					failed++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if failed != calls {
		t.Fatalf("%d of %d calls succeeded with Redis down", calls-failed, calls)
	}
	t.Logf("%d calls failed during the outage", calls)
}
