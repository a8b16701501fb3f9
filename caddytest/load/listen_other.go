//go:build !linux

package main

import (
	"syscall"
	"time"
)

// lateBind does nothing elsewhere than Linux (see listen_linux.go).
func lateBind(_, _ string, _ syscall.RawConn) error { return nil }

// startListening gives every socket a reader goroutine of its own: elsewhere than
// Linux there is no epoll loop (epoll_linux.go), and the client spends more per message.
func (s *waiterSet) startListening() error {
	s.listen = func(w *heldWaiter, c *waiterConn) error {
		go s.hold(w, c)
		return nil
	}
	return nil
}

// hold reads one waiter's socket until it ends, noting when each message arrives.
func (s *waiterSet) hold(w *heldWaiter, c *waiterConn) {
	defer c.Close()
	buf := make([]byte, 2*maxServerMessage)
	for {
		kind, err := c.next(buf)
		if err != nil {
			w.end()
			return
		}
		now := time.Since(s.start)
		w.heard(now, now, kind) // no receive times here: arrival is taken as the read
	}
}
