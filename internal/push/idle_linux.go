package push

import (
	"os"
	"sync"
	"syscall"
)

// idleWatch holds a hub's parked sockets (idle.go) in an epoll instance of its own,
// each registered one-shot, and starts a socket's reader when its descriptor has
// something to read or is over. The epoll instance is itself a descriptor the
// runtime's poller waits on, so the watch keeps one goroutine per hub, parked in the
// poller like any reader, and no thread. A registration names the socket by a token,
// not by its descriptor's number, which a closed connection gives back for another's
// use. It is opened at the first park, so a hub that never holds a socket (caddy
// validate) opens none, and closed once the hub is shut and no socket is left in it.
type idleWatch struct {
	mu     sync.Mutex
	epoll  *os.File // nil until the first park, and again once closed
	fd     int      // epoll's descriptor
	parked map[uint64]*socket
	next   uint64 // the last token given
	shut   bool   // the hub is closing: nothing more is parked
}

// park registers s, whose descriptor is raw, and reports whether it did.
func (w *idleWatch) park(s *socket, raw syscall.RawConn) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.shut || (w.epoll == nil && !w.openLocked()) {
		return false
	}
	w.next++
	token := w.next
	var armed error
	// Control keeps the descriptor open (its number ours) for the call. The
	// registration is level-triggered: what arrived before it is reported at once.
	if err := raw.Control(func(fd uintptr) { armed = arm(w.fd, int(fd), token) }); err != nil || armed != nil {
		return false
	}
	w.parked[token] = s
	s.parkedAs = token
	return true
}

// arm registers fd in epfd, one-shot, under token. A descriptor the watch saw before
// is still registered, disabled by its last event, until it is closed.
func arm(epfd, fd int, token uint64) error {
	ev := syscall.EpollEvent{
		Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT,
		Fd:     int32(token), Pad: int32(token >> 32), // epoll's 64 bits of user data
	}
	err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_MOD, fd, &ev)
	if err == syscall.ENOENT {
		err = syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, fd, &ev)
	}
	return err
}

// unpark takes s out of the watch, and reports whether it was there: the caller then
// has the socket.
func (w *idleWatch) unpark(s *socket) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.parked[s.parkedAs] != s {
		return false
	}
	delete(w.parked, s.parkedAs)
	w.closeIfDoneLocked()
	return true
}

// close shuts the watch: nothing more is parked, and it closes once the sockets in it
// are gone (the hub's CloseAll tells each to close, and its writer takes it out).
func (w *idleWatch) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.shut = true
	w.closeIfDoneLocked()
}

func (w *idleWatch) closeIfDoneLocked() {
	if w.shut && len(w.parked) == 0 && w.epoll != nil {
		w.epoll.Close() // the watch's goroutine finds it closed and ends
		w.epoll = nil
	}
}

// openLocked opens the epoll instance and starts the goroutine that waits on it.
func (w *idleWatch) openLocked() bool {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return false
	}
	if syscall.SetNonblock(fd, true) != nil {
		syscall.Close(fd)
		return false
	}
	f := os.NewFile(uintptr(fd), "idle watch") // non-blocking: the runtime's poller waits on it
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return false
	}
	w.epoll, w.fd = f, fd
	if w.parked == nil {
		w.parked = make(map[uint64]*socket)
	}
	go w.watch(rc)
	return true
}

// watch starts a reader for every parked socket that has something to read or is
// over, until the epoll instance is closed. It only looks up tokens and starts
// goroutines: no client can hold it.
func (w *idleWatch) watch(rc syscall.RawConn) {
	var events [128]syscall.EpollEvent
	var woken []*socket
	for {
		n, failed := 0, error(nil)
		err := rc.Read(func(fd uintptr) bool {
			for {
				n, failed = syscall.EpollWait(int(fd), events[:], 0)
				if failed != syscall.EINTR {
					return n > 0 || failed != nil // nothing ready: the poller waits
				}
			}
		})
		if err != nil || failed != nil {
			return // closed
		}
		w.mu.Lock()
		for _, ev := range events[:n] {
			token := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			if s := w.parked[token]; s != nil {
				delete(w.parked, token)
				woken = append(woken, s)
			}
		}
		w.closeIfDoneLocked()
		w.mu.Unlock()
		for i, s := range woken {
			go s.read()
			woken[i] = nil
		}
		woken = woken[:0]
	}
}
