package main

import (
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// A client process listens to its ~17,000 waiters with one epoll loop, not a goroutine
// each. The client shares the machine with the Caddy processes it measures, and a
// goroutine woken by the runtime's poller per message, reading each socket twice (the
// message, then "would block"), cost more CPU per message than the server spent
// sending it: on 2 cores that starved the very pushes being timed. The loop reads a
// socket once per message and wakes once for many.
type listener struct {
	epfd    int
	start   time.Time // arrival times count from here, as heldWaiter's do
	buf     []byte    // the loop's read buffer, shared by every socket
	events  []syscall.EpollEvent
	mu      sync.Mutex
	sockets map[int32]*listened // by descriptor
}

// listenTick is how long the loop lets messages gather between reads: short beside
// the 2 s a waiter may go unspoken to, long beside a message's cost.
const listenTick = time.Millisecond

// listened is one socket in the loop.
type listened struct {
	fd int
	w  *heldWaiter
	c  *waiterConn
}

func newListener(start time.Time) (*listener, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	l := &listener{epfd: epfd, start: start, buf: make([]byte, 64<<10),
		events: make([]syscall.EpollEvent, 256), sockets: make(map[int32]*listened)}
	go l.loop()
	return l, nil
}

// add takes c's socket out of the Go runtime's hands and into the loop. What c has
// already read (the first position, often) is parsed first.
func (l *listener) add(w *heldWaiter, c *waiterConn) error {
	fd, err := detach(c.c)
	if err != nil {
		c.Close()
		return err
	}
	c.out = fdWriter(fd)
	ls := &listened{fd: fd, w: w, c: c}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sockets[int32(fd)] = ls
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(fd)}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		l.end(ls)
		return err
	}
	l.parse(ls, time.Since(l.start))
	return nil
}

// detach returns a descriptor of c's socket of our own and closes c, whose descriptor
// leaves the runtime's poller; the socket lives on in ours, non-blocking as the
// runtime left it.
func detach(c net.Conn) (int, error) {
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return -1, err
	}
	fd, derr := -1, error(nil)
	if err := raw.Control(func(s uintptr) { fd, derr = syscall.Dup(int(s)) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, derr
	}
	syscall.CloseOnExec(fd)
	c.Close()
	return fd, nil
}

func (l *listener) loop() {
	for {
		n, err := syscall.EpollWait(l.epfd, l.events, -1)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return
		}
		now := time.Since(l.start)
		l.mu.Lock()
		for _, ev := range l.events[:n] {
			if ls := l.sockets[ev.Fd]; ls != nil {
				l.readable(ls, now)
			}
		}
		l.mu.Unlock()
		if n < len(l.events) {
			// Let messages gather before the next wait: a loop woken for each
			// message costs a wake-up of its own and one of the sender's (a write
			// that finds a sleeper wakes it), and the sleep bounds wake-ups to a
			// thousand a second at any load. An arrival is noted up to a tick late.
			time.Sleep(listenTick)
		}
	}
}

// readable reads what ls's socket has and notes its messages. Called with l.mu held.
func (l *listener) readable(ls *listened, now time.Duration) {
	err := ls.c.receive(l.buf, func(b []byte) (int, error) {
		n, err := syscall.Read(ls.fd, b)
		if n == 0 && err == nil {
			return 0, io.EOF
		}
		return n, err
	})
	if err == syscall.EAGAIN {
		ls.c.keep()
		return
	}
	if err != nil {
		l.end(ls)
		return
	}
	l.parse(ls, now)
}

// parse notes every whole message ls.c holds, keeping the start of the next.
func (l *listener) parse(ls *listened, now time.Duration) {
	for {
		kind, ok, err := ls.c.take()
		if err != nil {
			l.end(ls)
			return
		}
		if !ok {
			ls.c.keep()
			return
		}
		ls.w.heard(now, kind)
	}
}

// end lets go of a socket that closed or failed. Called with l.mu held.
func (l *listener) end(ls *listened) {
	if l.sockets[int32(ls.fd)] != ls {
		return
	}
	delete(l.sockets, int32(ls.fd))
	_ = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, ls.fd, nil)
	syscall.Close(ls.fd)
	ls.w.end()
}

// fdWriter writes to a socket the loop holds (pongs and close replies, a few bytes).
type fdWriter int

func (f fdWriter) Write(p []byte) (int, error) { return syscall.Write(int(f), p) }
