//go:build !linux

package push

// parkedCount is how many sockets wait in the watch: none off Linux.
func (*idleWatch) parkedCount() int { return 0 }
