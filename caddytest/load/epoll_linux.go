package main

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// A client process listens to its ~17,000 waiters with one epoll loop, not a goroutine
// each. The client shares the machine with the Caddy processes it measures, and a
// goroutine woken by the runtime's poller per message, reading each socket twice (the
// message, then "would block"), costs more CPU per message than the server spends
// sending it: on 2 cores that starves the very pushes being timed. The loop reads a
// socket once per message and wakes once for many. Sockets are watched edge-triggered:
// a level-triggered watch looks at every socket it reported once more at the next
// wait, a tenth of the loop's time in the kernel.
type listener struct {
	epfd    int
	start   time.Time // arrival times count from here, as heldWaiter's do
	buf     []byte    // the loop's read buffer, shared by every socket
	raw     []byte    // over TLS, what a read of the socket took, before decryption
	oob     []byte    // a read's control message: when its bytes reached the socket
	events  []syscall.EpollEvent
	mu      sync.Mutex
	sockets []*listened // by descriptor
}

// listenTick is how long the loop lets messages gather between reads: long beside a
// message's cost, so a wake-up serves dozens, and harmless to what is measured, since
// a message is dated by when it reached the socket (receiveTime), not by the read.
const listenTick = 5 * time.Millisecond

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
	l := &listener{epfd: epfd, start: start, buf: make([]byte, 64<<10), raw: make([]byte, 64<<10), oob: make([]byte, 64),
		events: make([]syscall.EpollEvent, 256)}
	go l.loop()
	return l, nil
}

// add takes c's socket out of the Go runtime's hands and into the loop. What c has
// already read (the first position, often) is parsed first.
func (l *listener) add(w *heldWaiter, c *waiterConn) error {
	tcp := c.c
	if c.feed != nil {
		tcp = c.feed.Conn
	}
	fd, err := detach(tcp)
	if err != nil {
		c.Close()
		return err
	}
	if c.feed != nil {
		c.feed.take(fd) // c.out stays the TLS connection, which writes to fd
	} else {
		c.out = fdWriter(fd)
	}
	// Each read says when its last bytes reached the socket (see receiveTime).
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1); err != nil {
		syscall.Close(fd)
		return err
	}
	ls := &listened{fd: fd, w: w, c: c}
	l.mu.Lock()
	defer l.mu.Unlock()
	if fd >= len(l.sockets) {
		l.sockets = append(l.sockets, make([]*listened, fd+1-len(l.sockets))...)
	}
	l.sockets[fd] = ls
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | epollET, Fd: int32(fd)}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		l.end(ls)
		return err
	}
	now := time.Since(l.start)
	l.parse(ls, now, now) // read during the handshake: no receive time, the read's is taken
	if c.feed != nil && l.sockets[fd] == ls {
		// The TLS connection may hold records it read from the socket during the
		// handshake, which no event will announce.
		l.readable(ls, now)
	}
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
			if int(ev.Fd) < len(l.sockets) && l.sockets[ev.Fd] != nil {
				l.readable(l.sockets[ev.Fd], now)
			}
		}
		l.mu.Unlock()
		if n < len(l.events) {
			// Let messages gather before the next wait: a loop woken for each
			// message costs a wake-up of its own and one of the sender's (a write
			// that finds a sleeper wakes it), and the sleep bounds wake-ups to a
			// couple of hundred a second at any load. The thread sleeps in the
			// kernel: a Go timer parked the loop and had the scheduler look for work
			// and wait in the runtime's poller, a seventh of the client's CPU at
			// 17,000 waiters (its -profiles CPU profile, findRunnable).
			ts := syscall.NsecToTimespec(int64(listenTick))
			_ = syscall.Nanosleep(&ts, nil)
		}
	}
}

// readable reads what ls's socket has and notes its messages. The watch is
// edge-triggered, so it reads until the socket is empty: a read that fills the buffer
// may have left more. Called with l.mu held.
func (l *listener) readable(ls *listened, now time.Duration) {
	noted := 0 // messages this call read, all dated by its last read
	defer func() {
		if noted > 1 {
			ls.w.readTogether(noted - 1)
		}
	}()
	arrived := now
	recv := func(b []byte) (int, error) {
		n, oobn, err := recvmsg(ls.fd, b, l.oob)
		if n == 0 && err == nil {
			return 0, io.EOF
		}
		if at, ok := receiveTime(l.oob[:oobn]); ok {
			arrived = at.Sub(l.start)
		}
		return n, err
	}
	read := recv
	if f := ls.c.feed; f != nil {
		// Over TLS: all the socket has goes to the TLS connection, and the messages
		// are read out of it, one record a read, until it needs more.
		f.fill(l.raw, recv)
		read = ls.c.c.Read
	}
	for l.sockets[ls.fd] == ls {
		err := ls.c.receive(l.buf, read)
		if err == syscall.EAGAIN {
			ls.c.keep()
			return
		}
		if err != nil {
			l.end(ls)
			return
		}
		full := len(ls.c.in) == len(l.buf)
		noted += l.parse(ls, arrived, now)
		if !full && ls.c.feed == nil {
			return
		}
	}
}

// recvmsg reads the non-blocking socket fd into b, and the read's control messages
// into oob, as one raw system call, which the Go scheduler is not told of. One the
// scheduler is told of (syscall.Recvmsg) marks the loop's P as in a system call, and
// a loop making one per message kept the runtime's monitor waking itself up and
// handing the P between threads: the same cost the room's pushes had (see
// internal/push/writenow_unix.go), in processes that share the cores with the servers
// they measure. unsafe only hands the kernel our own buffers and reads the control
// messages it wrote into oob, as syscall.Recvmsg and syscall.ParseSocketControlMessage
// do.
func recvmsg(fd int, b, oob []byte) (n, oobn int, err error) {
	iov := syscall.Iovec{Base: unsafe.SliceData(b)}
	iov.SetLen(len(b))
	msg := syscall.Msghdr{Iov: &iov, Iovlen: 1, Control: unsafe.SliceData(oob)}
	msg.SetControllen(len(oob))
	r, _, errno := syscall.RawSyscall(syscall.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), 0)
	if errno != 0 {
		return 0, 0, errno
	}
	return int(r), int(msg.Controllen), nil
}

// receiveTime is the kernel's time of receipt in a read's control message
// (SO_TIMESTAMPNS): for TCP, when the last bytes the read returned reached the
// socket. On one machine that is when the server's write delivered them, whatever the
// client process was doing then.
func receiveTime(oob []byte) (time.Time, bool) {
	const header = syscall.SizeofCmsghdr
	for len(oob) >= header {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&oob[0]))
		size := int(h.Len)
		if size < header || size > len(oob) {
			return time.Time{}, false
		}
		if h.Level == syscall.SOL_SOCKET && h.Type == syscall.SCM_TIMESTAMPNS && size >= header+16 {
			sec := int64(binary.NativeEndian.Uint64(oob[header:]))
			nsec := int64(binary.NativeEndian.Uint64(oob[header+8:]))
			return time.Unix(sec, nsec), true
		}
		oob = oob[(size+7)&^7:] // each message is padded to 8 bytes
	}
	return time.Time{}, false
}

// parse notes every whole message ls.c holds, keeping the start of the next, and
// says how many it noted.
func (l *listener) parse(ls *listened, arrived, read time.Duration) int {
	for n := 0; ; n++ {
		kind, ok, err := ls.c.take()
		if err != nil {
			l.end(ls)
			return n
		}
		if !ok {
			ls.c.keep()
			return n
		}
		ls.w.heard(arrived, read, kind)
	}
}

// end lets go of a socket that closed or failed. Called with l.mu held.
func (l *listener) end(ls *listened) {
	if l.sockets[ls.fd] != ls {
		return
	}
	l.sockets[ls.fd] = nil
	_ = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, ls.fd, nil)
	syscall.Close(ls.fd)
	ls.w.end()
}

// epollET asks for edge-triggered events (EPOLLET is 1<<31, which syscall's constant
// gives as a negative int).
const epollET = 1 << 31

// fdWriter writes to a socket the loop holds (pongs and close replies, a few bytes).
type fdWriter int

func (f fdWriter) Write(p []byte) (int, error) { return syscall.Write(int(f), p) }
