package main

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// startListening hands the set's sockets to one epoll loop (epoll_linux.go).
func (s *waiterSet) startListening() error {
	l, err := newListener(s.start)
	if err != nil {
		return err
	}
	s.listen = l.add
	return nil
}

// lateBind is the dialer's Control for sockets that leave from a source address of
// their own: it asks the kernel to pick the source port at connect, not at bind.
// Bound first, a socket must get a port no other socket on that address holds, and
// the kernel searches the whole range for one, which at 17,000 sockets a process cost
// the client milliseconds of CPU per join and starved the server it measures. At
// connect a port need only be free towards that destination.
func lateBind(_, _ string, c syscall.RawConn) error {
	var err error
	if cerr := c.Control(func(fd uintptr) {
		err = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
	}); cerr != nil {
		return cerr
	}
	return err
}
