package push

import "syscall"

// awaitReadable waits until the client has sent something (or the connection is
// over), without reading it: a peek of one byte that never blocks, and the runtime's
// poller in between. It returns an error only when the descriptor is closed.
func awaitReadable(raw syscall.RawConn) error {
	var one [1]byte
	return raw.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), one[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return err != syscall.EAGAIN // data, end of stream, or an error the read will meet
	})
}
