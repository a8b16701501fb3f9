package push

import (
	"syscall"
	"unsafe"
)

// sendQueueEmpty reports whether the socket's kernel send queue is empty: everything
// written to it was acknowledged by the client (SIOCOUTQ, the bytes written and not
// yet acknowledged), so a write of a few hundred bytes is taken whole at once.
func sendQueueEmpty(raw syscall.RawConn) bool {
	var queued int32
	var errno syscall.Errno
	if err := raw.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCOUTQ, uintptr(unsafe.Pointer(&queued)))
	}); err != nil || errno != 0 {
		return false
	}
	return queued == 0
}
