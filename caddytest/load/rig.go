package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A rig owns everything a run starts: the Caddy binary it built, the Caddy and Redis
// processes, and their folders. close stops them all, so an interrupted run leaves
// nothing behind.
type rig struct {
	ctx   context.Context
	o     options
	dir   string // everything the run writes, removed by close
	caddy string // the built binary

	mu    sync.Mutex
	procs []*proc
	ports map[int]bool // every port handed out in this run (see freePort)
}

const startDeadline = 60 * time.Second

func newRig(ctx context.Context, o options) (*rig, error) {
	for _, tool := range []string{"redis-server", "wrk"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%s is not on PATH (Debian: apt-get install redis-server wrk)", tool)
		}
	}
	dir, err := os.MkdirTemp("", "waiting-room-load-")
	if err != nil {
		return nil, err
	}
	r := &rig{ctx: ctx, o: o, dir: dir, ports: map[int]bool{}}
	if err := r.build(); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// build compiles Caddy with the plugin (the same main package the multi-instance tests
// use), without the race detector: these are the figures a user would see.
func (r *rig) build() error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	r.caddy = filepath.Join(r.dir, "caddy")
	fmt.Fprintln(os.Stderr, "building Caddy with the plugin…")
	cmd := exec.CommandContext(r.ctx, "go", "build", "-o", r.caddy, "./testdata/caddy")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./testdata/caddy (in %s): %v\n%s", root, err, out)
	}
	return nil
}

// moduleRoot is the folder of the caddytest module (the go.mod nearest above the
// working directory): the harness runs with `go run ./load` from there, and
// testdata/caddy is built in that module, the one that requires the plugin.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run the harness from the caddytest folder: cd caddytest && go run ./load (no go.mod found above the working directory)")
		}
		dir = parent
	}
}

func (r *rig) close() {
	r.mu.Lock()
	procs := r.procs
	r.procs = nil
	r.mu.Unlock()
	for _, p := range procs {
		p.stop()
	}
	if r.o.keep {
		fmt.Fprintln(os.Stderr, "kept the run's folder:", r.dir)
		return
	}
	_ = os.RemoveAll(r.dir)
}

// freePort returns a loopback port that was free a moment ago and that this run has not
// handed out before. Caddy listens with SO_REUSEPORT, so two instances given the same
// port would both bind it and split its traffic; never reusing one rules that out.
func (r *rig) freePort() (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !r.ports[port] {
			r.ports[port] = true
			return port, nil
		}
	}
	return 0, errors.New("no fresh free port in 100 tries")
}

// A proc is one process the rig started, with its output in a log file.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
}

// start runs name's command with its output in the rig's folder. Processes are stopped
// by close, in any case.
func (r *rig) start(name string, env []string, bin string, args ...string) (*proc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	return r.launch(name, cmd)
}

// launch starts cmd as the process called name; its stderr, and its stdout unless the
// caller took that, go to the log file.
func (r *rig) launch(name string, cmd *exec.Cmd) (*proc, error) {
	logPath := filepath.Join(r.dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	p := &proc{name: name, logPath: logPath, exited: make(chan struct{}), cmd: cmd}
	if p.cmd.Stdout == nil {
		p.cmd.Stdout = logFile
	}
	p.cmd.Stderr = logFile
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	r.mu.Lock()
	r.procs = append(r.procs, p)
	r.mu.Unlock()
	return p, nil
}

func (p *proc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

func (p *proc) stop() {
	if p.alive() {
		_ = p.cmd.Process.Kill()
	}
	<-p.exited
}

// log is the end of the process's output, for error messages.
func (p *proc) log() string {
	b, _ := os.ReadFile(p.logPath)
	if len(b) > 4000 {
		b = append([]byte("…"), b[len(b)-4000:]...)
	}
	return string(b)
}

// rssBytes is the process's resident memory, from /proc: what the operator's machine
// pays, Go runtime and all.
func (p *proc) rssBytes() (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

// cpuTime is the CPU time the process has used so far, all threads, user and system
// (/proc/<pid>/stat, in clock ticks of 10 ms): what it cost, whatever else the machine
// was busy with.
func (p *proc) cpuTime() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold anything: count fields after it.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc stat of %s", p.name)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	const tick = 10 * time.Millisecond // USER_HZ, 100 on Linux
	return time.Duration(utime+stime) * tick, nil
}

// waitHTTP polls url until it answers 200, the process exits, or the deadline passes.
func waitHTTP(ctx context.Context, p *proc, url string) error {
	deadline := time.Now().Add(startDeadline)
	for {
		resp, err := siteClient.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		if !p.alive() {
			return fmt.Errorf("%s exited at start:\n%s", p.name, p.log())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not answer %s: %v\n%s", p.name, url, err, p.log())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
