package caddytest

import (
	"cmp"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A fleet is several real Caddy processes, each on its own loopback port with its own
// admin endpoint and data dirs, serving the same waiting room(s) from one shared store.
// Caddy is one per process, so a fleet is the only way to test what a load balancer in
// front of many instances would see.

// caddyBinary builds testdata/caddy (Caddy with the plugin) once per test binary. It is
// not race-instrumented: the race detector watches the in-process tests; these watch
// what several processes do together.
func caddyBinary(t testing.TB) string { return caddyBuild.path(t) }

var caddyBuild = &testBinary{name: "caddy", pkg: "./testdata/caddy"}

// testBinary is a program of testdata/ built once per test binary, inside the
// temporary data dir that TestMain removes at the end: one binary per test run, never
// one that another checkout's run built.
type testBinary struct {
	name, pkg string
	once      sync.Once
	built     string
	err       error
}

func (b *testBinary) path(t testing.TB) string {
	t.Helper()
	b.once.Do(func() {
		dir := filepath.Join(os.Getenv("XDG_DATA_HOME"), "bin")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			b.err = err
			return
		}
		out := filepath.Join(dir, b.name)
		building := fmt.Sprintf("%s.%d", out, os.Getpid())
		goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(goTool); err != nil {
			goTool = "go"
		}
		start := time.Now()
		msg, err := exec.Command(goTool, "build", "-o", building, b.pkg).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", b.pkg, err, msg)
			return
		}
		if err := os.Rename(building, out); err != nil {
			b.err = err
			return
		}
		b.built = out
		t.Logf("built %s in %v", out, time.Since(start).Round(time.Millisecond))
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.built
}

// node is one caddy process of a fleet. Its directory holds its Caddyfile, its data
// and config dirs and its log, and outlives the process: restart runs the node again
// on the same ports and the same data, as a host's supervisor would.
type node struct {
	name    string
	base    string // http://127.0.0.1:<port>
	admin   string // http://localhost:<admin port>
	dir     string
	bin     string
	data    string // XDG_DATA_HOME: dir/data, unless it shares another node's
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
}

type fleet struct {
	t     testing.TB
	nodes []*node
}

// siteConfig is one node's Caddyfile: rooms (waiting_room blocks written by the test)
// in front of a tiny upstream. /healthz is outside every room (readiness probes must
// not become visitors); a path ending in /done answers with the revoke command, as a
// shop's checkout would; anything else echoes its path.
func siteConfig(i, httpPort, httpsPort, adminPort int, rooms string) string {
	return fmt.Sprintf(`{
	admin localhost:%d
	http_port %d
	https_port %d
	default_bind 127.0.0.1
	grace_period 1ns
	skip_install_trust
	auto_https off
	persist_config off
	log {
		level WARN
	}
}

http://127.0.0.1:%d {
%s
	handle /healthz {
		respond "ok"
	}
	@done path */done
	handle @done {
		header Waiting-Room-Command revoke
		respond "done"
	}
	respond "upstream {path} node%d"
}
`, adminPort, httpPort, httpsPort, httpPort, rooms, i)
}

// startFleet starts n caddy processes, each with rooms(i) as its waiting_room blocks,
// and waits until each answers. They are killed when the test ends.
func startFleet(t testing.TB, n int, rooms func(i int) string) *fleet {
	t.Helper()
	bin := caddyBinary(t)
	f := &fleet{t: t}
	for i := range n {
		f.nodes = append(f.nodes, f.start(bin, i, rooms(i)))
	}
	for _, nd := range f.nodes {
		f.waitReady(nd)
	}
	return f
}

func (f *fleet) start(bin string, i int, rooms string) *node { return f.startOn(bin, i, rooms, "") }

// startOn starts node i on the data directory data (XDG_DATA_HOME), or on its own
// when data is "".
func (f *fleet) startOn(bin string, i int, rooms, data string) *node {
	t := f.t
	t.Helper()
	dir := t.TempDir()
	httpPort, httpsPort, adminPort := freeTCPPort(t), freeTCPPort(t), freeTCPPort(t)
	cfg := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(cfg, []byte(siteConfig(i, httpPort, httpsPort, adminPort, rooms)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"data", "config"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	nd := &node{
		name:    fmt.Sprintf("node%d", i),
		base:    fmt.Sprintf("http://127.0.0.1:%d", httpPort),
		admin:   fmt.Sprintf("http://localhost:%d", adminPort),
		dir:     dir,
		bin:     bin,
		data:    cmp.Or(data, filepath.Join(dir, "data")),
		logPath: filepath.Join(dir, "caddy.log"),
	}
	nd.run(t)
	t.Cleanup(func() {
		if nd.alive() {
			_ = nd.cmd.Process.Kill()
		}
		<-nd.exited
		if log := nd.log(); strings.Contains(log, "panic") || strings.Contains(log, "fatal error") {
			t.Errorf("%s logged a panic:\n%s", nd.name, tail(log, 4000))
		}
	})
	return nd
}

// run starts nd's process on its directory, its log appended to the log of the runs
// before.
func (nd *node) run(t testing.TB) {
	t.Helper()
	logFile, err := os.OpenFile(nd.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(nd.bin, "run", "--config", filepath.Join(nd.dir, "Caddyfile"), "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(),
		"XDG_DATA_HOME="+nd.data,
		"XDG_CONFIG_HOME="+filepath.Join(nd.dir, "config"),
		"HOME="+nd.dir,
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("starting %s: %v", nd.name, err)
	}
	exited := make(chan struct{})
	nd.cmd, nd.exited = cmd, exited
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(exited)
	}()
}

// restart runs a node that has stopped (stop, kill) again, on the same ports, config
// and data directory, and waits until it answers.
func (f *fleet) restart(nd *node) {
	f.t.Helper()
	if nd.alive() {
		f.t.Fatalf("%s is still running: stop or kill it before restarting it", nd.name)
	}
	nd.run(f.t)
	f.waitReady(nd)
}

// dataDir is Caddy's data directory on nd (caddy.AppDataDir in its process): where
// its certificates and its rooms' state files are.
func (nd *node) dataDir() string { return filepath.Join(nd.data, "caddy") }

// startBeside starts another node with rooms on the data directory of nd (a second
// Caddy on one host's data, by mistake or while the first is still stopping), on its
// own ports, and waits until it answers.
func (f *fleet) startBeside(nd *node, i int, rooms string) *node {
	f.t.Helper()
	other := f.startOn(nd.bin, i, rooms, nd.data)
	f.waitReady(other)
	return other
}

func (f *fleet) waitReady(nd *node) {
	t := f.t
	t.Helper()
	deadline := time.Now().Add(startDeadline)
	for {
		if !nd.alive() {
			t.Fatalf("%s exited at start:\n%s", nd.name, tail(nd.log(), 4000))
		}
		resp, err := http.Get(nd.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not answer /healthz: %v\n%s", nd.name, err, tail(nd.log(), 4000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (nd *node) alive() bool {
	select {
	case <-nd.exited:
		return false
	default:
		return true
	}
}

func (nd *node) log() string {
	b, _ := os.ReadFile(nd.logPath)
	return string(b)
}

// requireUp fails the test unless every node's process runs and answers its health
// check and its admin endpoint.
func (f *fleet) requireUp() {
	f.t.Helper()
	for _, nd := range f.nodes {
		if !nd.alive() {
			f.t.Fatalf("%s is not running:\n%s", nd.name, tail(nd.log(), 4000))
		}
		for _, u := range []string{nd.base + "/healthz", nd.admin + "/config/"} {
			resp, err := http.Get(u)
			if err != nil {
				f.t.Fatalf("%s: %s: %v", nd.name, u, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				f.t.Fatalf("%s: %s answered %d", nd.name, u, resp.StatusCode)
			}
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// handedOut remembers every port given to a node in this test binary, so no two nodes
// (nor one node's http and admin listeners) are ever handed the same one.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// freeTCPPort returns a loopback port that was free a moment ago and that no other
// node of this run was given. (The kernel may hand a just-closed port out again, so
// "free" alone is not enough when a node needs three.)
func freeTCPPort(t testing.TB) int {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port
		}
	}
	t.Fatal("no fresh free port in 100 tries")
	return 0
}

// roomBlock is a waiting_room covering paths (a path matcher's arguments), on store
// (what follows `store`), with extra sub-directives.
func roomBlock(name, paths string, capacity int, store string, extra ...string) string {
	return fmt.Sprintf("\t@%s path %s\n\twaiting_room @%s {\n\t\tname %s\n\t\tcapacity %d\n\t\tstore %s\n\t\t%s\n\t}\n",
		name, paths, name, name, capacity, store, strings.Join(extra, "\n\t\t"))
}

// stop stops nd as an orchestrator does (SIGTERM: Caddy's graceful stop) and waits
// until it has exited; a node that outlives the start deadline is killed and fails the
// test.
func (nd *node) stop(t testing.TB) {
	t.Helper()
	if !nd.alive() {
		return
	}
	if err := nd.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM to %s: %v", nd.name, err)
	}
	select {
	case <-nd.exited:
	case <-time.After(startDeadline):
		_ = nd.cmd.Process.Kill()
		<-nd.exited
		t.Fatalf("%s did not stop within %v of SIGTERM:\n%s", nd.name, startDeadline, tail(nd.log(), 4000))
	}
}

// kill ends nd as a crash does (SIGKILL: nothing runs after it) and waits until it has
// exited.
func (nd *node) kill(t testing.TB) {
	t.Helper()
	if !nd.alive() {
		return
	}
	if err := nd.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL to %s: %v", nd.name, err)
	}
	<-nd.exited
}

// stopByAdmin stops nd as `caddy stop` does (POST /stop on its admin endpoint) and
// waits until it has exited.
func (nd *node) stopByAdmin(t testing.TB) {
	t.Helper()
	resp, err := http.Post(nd.admin+"/stop", "", nil)
	if err != nil {
		t.Fatalf("POST /stop to %s: %v", nd.name, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /stop to %s answered %d", nd.name, resp.StatusCode)
	}
	select {
	case <-nd.exited:
	case <-time.After(startDeadline):
		_ = nd.cmd.Process.Kill()
		<-nd.exited
		t.Fatalf("%s did not exit within %v of POST /stop:\n%s", nd.name, startDeadline, tail(nd.log(), 4000))
	}
}
