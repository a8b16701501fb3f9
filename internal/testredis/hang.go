package testredis

import (
	"net"
	"sync"
	"syscall"
	"testing"
)

// Faults that hang rather than refuse: a Redis that stops answering (SIGSTOP, as a
// fork stall or a paused VM would) and a network path that stops forwarding. A dead
// port refuses at once; these leave the client waiting for its timeout, with its
// request sitting in a buffer, which is what a sale really meets.

// Pause stops the server with SIGSTOP: it keeps its connections and its port, reads
// nothing and answers nothing until Resume.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused server with SIGCONT; it then carries out what was written
// to it meanwhile.
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.t.Helper()
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		s.t.Fatalf("signalling redis-server on %s: not running", s.Addr)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("signalling redis-server on %s: %v", s.Addr, err)
	}
}

// Proxy is a loopback TCP proxy in front of a server that can stop forwarding: a
// blackhole, not a refusal. While blackholed it accepts connections and reads what
// clients send, but forwards nothing either way; on Forward it delivers what it held
// back, as a network path that recovers delivers what it had queued.
type Proxy struct {
	// Addr is the proxy's host:port, for the client under test.
	Addr string

	ln     net.Listener
	target string
	mu     sync.Mutex
	cond   *sync.Cond
	held   bool
	conns  map[net.Conn]struct{}
	closed bool
}

// StartProxy starts a forwarding proxy to target (host:port) and closes it when the
// test ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("starting proxy: %v", err)
	}
	p := &Proxy{Addr: ln.Addr().String(), ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Blackhole stops forwarding, on open connections and new ones.
func (p *Proxy) Blackhole() { p.set(true) }

// Forward forwards again, first what was held back.
func (p *Proxy) Forward() { p.set(false) }

func (p *Proxy) set(held bool) {
	p.mu.Lock()
	p.held = held
	p.mu.Unlock()
	p.cond.Broadcast()
}

func (p *Proxy) close() {
	p.mu.Lock()
	p.closed, p.held = true, false
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.cond.Broadcast()
	_ = p.ln.Close()
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *Proxy) serve(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = client.Close()
		return
	}
	if !p.track(client, server) {
		return
	}
	go p.pipe(server, client)
	p.pipe(client, server)
}

func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// pipe copies from src to dst, holding each read back while the proxy is blackholed.
// Reading on while holding means the sender's writes succeed, as they do into a path
// that silently drops or queues.
func (p *Proxy) pipe(src, dst net.Conn) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.held && !p.closed {
				p.cond.Wait()
			}
			closed := p.closed
			p.mu.Unlock()
			if closed {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a closed connection: close the other side too
		}
	}
}

// Reserve picks a free port for a server without starting it, for tests of starting
// while Redis is down: Restart starts it there.
func Reserve(t testing.TB) *Server {
	t.Helper()
	requireRedis(t)
	return newServer(t, freePort(t, false), nil)
}
