//go:build !linux

package push

import "syscall"

// sendQueueEmpty cannot tell elsewhere than Linux: TLS pushes go to the socket's
// writer (see tlssocket.go).
func sendQueueEmpty(syscall.RawConn) bool { return false }
