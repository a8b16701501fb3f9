package push

// A waiting socket hears from its client a few times an hour, and at 100,000 waiters
// what each idle socket keeps is most of the memory. A reader blocked in the WebSocket
// library's read keeps a goroutine and its stack (2 KiB at least, 4 KiB once grown by
// crypto/tls's read path), and the collector lets the heap grow by as much again over
// stacks. So an idle socket keeps no goroutine: once the client's last message is
// handled and nothing is buffered above the descriptor, the socket is parked in its
// hub's idle watch (idle_linux.go: one epoll instance per hub, itself waited on by the
// runtime's poller) and the reader's goroutine ends. When the client sends something,
// or the connection ends, the watch starts a new reader, which reads it and parks the
// socket again. A waiter's server memory is then 8 KiB over plain HTTP against 11.5
// with a reader per socket, and 20 KiB over TLS against 23, every waiter still told
// within 2 s (cd caddytest && go run ./load -only ws -tls -waiters 10000 -instances 2
// -clients 2; docs/performance.md, "Over TLS").
//
// Over TLS the socket may be parked only when crypto/tls holds nothing the client sent
// (tlsHoldsInput): the descriptor's readiness cannot show what crypto/tls read ahead.
// Off Linux there is no watch, and the reader waits inside its read.
//
// Who ends a socket: its reader, when a read fails, or, while the socket is parked,
// whoever takes it out of the watch: the watch, which starts a reader that finds the
// connection over, or the socket's writer, which closed the connection itself (letGo):
// a closed descriptor leaves the epoll set without an event, and no reader would ever
// see it.

// park hands the socket to the hub's idle watch, and reports whether it did: the
// calling goroutine then lets go of the socket. It does not when something is
// buffered above the descriptor, when the socket is ending (the library's closing
// handshake then reads the connection from the writer, and the reader's read must
// meet it), or when the socket cannot be watched; the caller reads then. The socket's
// ends are set under s.mu before that closing starts, so looking at the buffers under
// s.mu never meets it.
func (s *socket) park() bool {
	raw := s.raw
	if s.underTLS != nil {
		raw = s.underTLS
		if s.mustReadTLS() {
			return false
		}
	}
	if raw == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.endingLocked() || s.br.Buffered() > 0 {
		return false
	}
	return s.hb.idle.park(s, raw)
}

// endingLocked reports whether one of the socket's ends is set. Called with s.mu held.
func (s *socket) endingLocked() bool {
	return s.done || s.admitted || s.lost || s.left || s.closing
}

// letGo ends a socket whose writer closed the connection, if the socket is parked: no
// reader is there to find the connection over.
func (s *socket) letGo() {
	if s.hb.idle.unpark(s) {
		s.end()
	}
}

// mustReadTLS reports whether the caller must read before it parks the socket:
// crypto/tls holds something the client sent, or the socket is ending. Not under s.mu:
// the peek may meet crypto/tls answering a KeyUpdate, a write bounded only by its
// deadline, and a push takes s.mu.
func (s *socket) mustReadTLS() bool {
	s.probing.Lock()
	defer s.probing.Unlock()
	s.mu.Lock()
	ending := s.endingLocked()
	s.mu.Unlock()
	return ending || s.tlsHoldsInput()
}
