//go:build !linux

package push

import "syscall"

// awaitReadable returns at once off Linux: the reader then waits inside its read, as
// it would without the idle wait (idle.go).
func awaitReadable(syscall.RawConn) error { return nil }
