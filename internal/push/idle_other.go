//go:build !linux

package push

import "syscall"

// idleWatch parks nothing off Linux: a socket's reader waits inside its read, as it
// would without the watch (idle.go).
type idleWatch struct{}

func (*idleWatch) park(*socket, syscall.RawConn) bool { return false }

func (*idleWatch) unpark(*socket) bool { return false }

func (*idleWatch) close() {}
