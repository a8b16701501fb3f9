//go:build !unix

package push

import "syscall"

// writeNow writes nothing where there is no raw write(2): every position goes to the
// socket's writer, which writes through the connection.
func writeNow(syscall.RawConn, []byte) int { return 0 }
