//go:build unix

package push

import (
	"sync"
	"syscall"
	"unsafe"
)

// writeNow writes as much of b as the connection takes without waiting, and returns
// how much that was: all of it unless the client has left its kernel buffers full.
// The runtime keeps the descriptor non-blocking, so the write never sleeps, and it is
// made as a raw system call, which the scheduler is not told of. A write(2) the
// runtime is told of (syscall.Write) marks the hub's P as in a system call, and
// with thousands of waiters on one instance the scheduler's monitor, finding it so
// every few tens of microseconds, hands the P to another thread and wakes itself up
// ever more often: at 17,000 waiters that monitor costs the instance 13 % of its CPU
// with syscall.Write, 3 % with the raw call (perf record of
// go run ./load -only ws -waiters 17000 -instances 1 -clients 1).
// Control holds the descriptor open for the call without the runtime's write lock
// and poller reset: the socket's wire lock already keeps writers apart. unsafe is
// only how a raw system call is handed the address of our own frame, as the syscall
// package does for its own calls; no other package's state is touched.
func writeNow(raw syscall.RawConn, b []byte) int {
	w := rawWrites.Get().(*rawWrite)
	w.b, w.n = b, 0
	err := raw.Control(w.control)
	n := w.n
	w.b = nil
	rawWrites.Put(w)
	if err != nil {
		return 0
	}
	return n
}

// rawWrite is one writeNow's state, with the function Control runs bound to it once.
// A closure made for each call escapes (Control is an interface's method): two
// objects a push, 60,000 pushes a second at 100,000 waiters, and the largest source
// of an idle room's garbage, each collection of which marks every waiter's memory.
// Bound once, an instance's garbage outside requests and handshakes over the
// harness's ws section is about half of what it is with a closure per push (go tool
// pprof -sample_index=alloc_space of ws-caddy0-heap.pprof).
type rawWrite struct {
	b       []byte
	n       int
	control func(fd uintptr)
}

var rawWrites = sync.Pool{New: func() any {
	w := new(rawWrite)
	w.control = w.write
	return w
}}

func (w *rawWrite) write(fd uintptr) {
	for w.n < len(w.b) {
		m, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&w.b[w.n])), uintptr(len(w.b)-w.n))
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 || int(m) <= 0 {
			return // EAGAIN: the client's buffers are full; a writer of its own waits
		}
		w.n += int(m)
	}
}
