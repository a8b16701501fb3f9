// Package testredis starts real redis-server processes for tests: a standalone server
// that can be stopped and restarted on the same port (for outage tests), and a
// three-master Redis Cluster. Every server runs on a free loopback port in its own temp
// dir and is stopped by t.Cleanup. It keeps nothing on disk, except one started with
// StartAOF, which writes an append-only file there and reads it back on a restart.
//
// When redis-server is not installed the test is skipped with a loud message, unless
// the CI environment variable is set: then it fails, so a CI run never passes by
// skipping the Redis tests.
package testredis

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds how long a server may take to answer PING, and a cluster to
// reach cluster_state:ok.
const startTimeout = 20 * time.Second

// Server is one redis-server process on a fixed loopback port.
type Server struct {
	// Addr is host:port, stable across Stop and Restart.
	Addr string

	t       testing.TB
	port    int
	dir     string
	extra   []string
	aof     bool
	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	logFile string
}

// Start starts a standalone redis-server and stops it when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	requireRedis(t)
	port := freePort(t, false)
	s := newServer(t, port, nil)
	s.start()
	return s
}

// StartAOF starts a standalone redis-server that persists as a sale needs it to:
// appendonly yes with appendfsync everysec, its files in the server's own temp dir. A
// Restart or a RestartGraceful reads them back on the same port.
func StartAOF(t testing.TB) *Server {
	t.Helper()
	requireRedis(t)
	s := newServer(t, freePort(t, false), nil)
	s.aof = true
	s.start()
	return s
}

func newServer(t testing.TB, port int, extra []string) *Server {
	dir := t.TempDir()
	s := &Server{
		Addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		t:       t,
		port:    port,
		dir:     dir,
		extra:   extra,
		logFile: filepath.Join(dir, "redis.log"),
	}
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) start() {
	s.t.Helper()
	appendonly := []string{"--appendonly", "no"}
	if s.aof {
		appendonly = []string{"--appendonly", "yes", "--appendfsync", "everysec"}
	}
	args := []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--dir", s.dir,
		"--logfile", s.logFile,
	}
	args = append(args, appendonly...)
	args = append(args, s.extra...)
	cmd := exec.Command("redis-server", args...)
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("starting redis-server: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()

	deadline := time.Now().Add(startTimeout)
	for {
		reply, err := s.Do("PING")
		if err == nil && reply == "PONG" {
			return
		}
		select {
		case <-exited:
			s.t.Fatalf("redis-server on %s exited at start: %s", s.Addr, s.log())
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on %s does not answer PING: %v; log: %s", s.Addr, err, s.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server and waits until it has exited. Its port stays reserved for
// Restart only by convention: nothing else in the test should bind it.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// Restart kills the server (SIGKILL, a crash) and starts it again on the same port:
// empty, or, for a StartAOF server, with what its append-only file had on disk.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// Shutdown stops the server as an operator or an orchestrator does (SIGTERM: Redis
// writes out and fsyncs its append-only file, then exits) and waits until it has
// exited, bounded by the start timeout; past it, the server is killed and the test
// fails.
func (s *Server) Shutdown() {
	s.t.Helper()
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(startTimeout):
		_ = cmd.Process.Kill()
		<-exited
		s.t.Fatalf("redis-server on %s did not exit within %v of SIGTERM; log: %s", s.Addr, startTimeout, s.log())
	}
}

// RestartGraceful is Shutdown, then a start on the same port and files.
func (s *Server) RestartGraceful() {
	s.t.Helper()
	s.Shutdown()
	s.start()
}

// Do sends one command (arguments without spaces) and returns a simple, integer or
// bulk reply as a string. It is enough to probe a server and read INFO.
func (s *Server) Do(args ...string) (string, error) {
	return do(s.Addr, args...)
}

func (s *Server) log() string {
	b, _ := os.ReadFile(s.logFile)
	return string(b)
}

// Cluster is a Redis Cluster of three masters and no replicas.
type Cluster struct {
	// Addrs are the masters' host:port, any of which seeds a cluster client.
	Addrs   []string
	Servers []*Server
}

// StartCluster starts three cluster-enabled redis-servers, joins them with
// redis-cli --cluster create and waits until every node reports cluster_state:ok.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	return startCluster(t, 0, "5000")
}

// StartClusterWithReplicas starts 3 masters, each with one replica, and a short node
// timeout (1 s), so that killing a master promotes its replica within seconds. It
// returns once every replica has finished its first sync: a replica that never synced
// refuses to take over ("Disconnected from master for longer than allowed"), so a
// master killed before that would leave its slots without a master for good.
func StartClusterWithReplicas(t testing.TB) *Cluster {
	t.Helper()
	return startCluster(t, 1, "1000")
}

func startCluster(t testing.TB, replicas int, nodeTimeout string) *Cluster {
	t.Helper()
	requireRedis(t)
	if _, err := exec.LookPath("redis-cli"); err != nil {
		skipOrFail(t, "redis-cli is not on PATH: the Redis Cluster tests cannot run")
	}
	c := &Cluster{}
	for range 3 * (1 + replicas) {
		port := freePort(t, true)
		s := newServer(t, port, []string{
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", nodeTimeout,
			// A replica's first (full) sync starts at once, not after the default 5 s
			// wait for more replicas.
			"--repl-diskless-sync-delay", "0",
		})
		s.start()
		c.Servers = append(c.Servers, s)
		c.Addrs = append(c.Addrs, s.Addr)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	out, err := exec.Command("redis-cli", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(startTimeout)
	for _, s := range c.Servers {
		for {
			info, err := s.Do("CLUSTER", "INFO")
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cluster node %s not ok: %v %s", s.Addr, err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// Every node knows every replica, and every replica has synced.
	for _, s := range c.Servers {
		for {
			nodes, err := s.Do("CLUSTER", "NODES")
			info, err2 := s.Do("INFO", "replication")
			if err == nil && err2 == nil && strings.Count(nodes, " slave ")+strings.Count(nodes, ",slave ") == 3*replicas &&
				(strings.Contains(info, "role:master") || strings.Contains(info, "master_link_status:up")) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cluster node %s does not see every replica synced: %v %v\n%s\n%s", s.Addr, err, err2, nodes, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return c
}

func requireRedis(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		skipOrFail(t, "redis-server is not on PATH: the Redis tests cannot run (install Debian's redis-server)")
	}
}

func skipOrFail(t testing.TB, msg string) {
	t.Helper()
	banner := "\n*************************************************************\n" +
		"*** " + msg + "\n" +
		"*************************************************************"
	if os.Getenv("CI") != "" {
		t.Fatal(banner + "\n(CI is set, so this is a failure, not a skip)")
	}
	t.Skip(banner)
}

// freePort finds a loopback port nobody listens on; for a cluster node the bus port
// (port+10000) must be free too.
func freePort(t testing.TB, withBus bool) int {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("finding a free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !withBus {
			return port
		}
		if port+10000 > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000)))
		if err != nil {
			continue
		}
		_ = bus.Close()
		return port
	}
	t.Fatal("no free loopback port with a free bus port (+10000)")
	return 0
}

// do speaks just enough RESP to send one command and read a non-array reply.
func do(addr string, args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		return "", err
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", errors.New("empty reply")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", errors.New(line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	default:
		return "", fmt.Errorf("unexpected reply %q", line)
	}
}

// Commands reads INFO commandstats (see CountCommands).
func (s *Server) Commands(tb testing.TB) (scripts, total int64) {
	tb.Helper()
	info, err := s.Do("INFO", "commandstats")
	if err != nil {
		tb.Fatalf("INFO commandstats: %v", err)
	}
	return CountCommands(info)
}

// CPU is the CPU time the server has used so far (INFO cpu: used_cpu_user plus
// used_cpu_sys), the cost of what it ran that a busy machine hardly moves.
func (s *Server) CPU(tb testing.TB) time.Duration {
	tb.Helper()
	info, err := s.Do("INFO", "cpu")
	if err != nil {
		tb.Fatalf("INFO cpu: %v", err)
	}
	var sum time.Duration
	for line := range strings.SplitSeq(info, "\r\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok || (name != "used_cpu_user" && name != "used_cpu_sys") {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			tb.Fatalf("INFO cpu: %s: %v", line, err)
		}
		sum += time.Duration(f * float64(time.Second))
	}
	return sum
}

// CountCommands reads the text of INFO commandstats: the scripts run (EVALSHA and EVAL,
// a store's round trips) and every command Redis ran, those inside scripts included,
// the INFO calls themselves left out. Pub/Sub deliveries are not commands; PUBLISH
// inside a script is. The load harness reads it too.
func CountCommands(info string) (scripts, total int64) {
	for line := range strings.SplitSeq(info, "\r\n") {
		name, rest, ok := strings.Cut(line, ":calls=")
		if !ok || name == "cmdstat_info" {
			continue
		}
		n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
		total += n
		if name == "cmdstat_evalsha" || name == "cmdstat_eval" {
			scripts += n
		}
	}
	return scripts, total
}

// Sentinel is a master watched by one Redis Sentinel, for the Sentinel client path:
// the store asks the Sentinel at Addr where master MasterName is.
type Sentinel struct {
	Master     *Server
	Addr       string
	MasterName string
}

// StartSentinel starts a master and a Sentinel monitoring it (redis-server --sentinel,
// the same binary), and stops both when the test ends.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	master := Start(t)
	port := freePort(t, false)
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\n"+
		"sentinel monitor wr 127.0.0.1 %d 1\nsentinel down-after-milliseconds wr 1000\n",
		port, dir, filepath.Join(dir, "sentinel.log"), master.port)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("redis-server", conf, "--sentinel")
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting redis sentinel: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	s := &Sentinel{Master: master, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), MasterName: "wr"}
	deadline := time.Now().Add(startTimeout)
	for {
		if reply, err := do(s.Addr, "PING"); err == nil && reply == "PONG" {
			return s
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "sentinel.log"))
			t.Fatalf("redis sentinel exited at start: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("redis sentinel does not answer PING")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Log is what the server has written to its log file so far, for a failure message.
func (s *Server) Log() string { return s.log() }
