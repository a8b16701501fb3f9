package push

// A waiting socket hears from its client a few times an hour, and at 100,000 waiters
// what each idle reader keeps is most of the memory. Blocked inside the WebSocket
// library's read, the reader keeps a stack grown by that call path (4 KiB) and, over
// TLS, the record buffer crypto/tls grows for the next record header (576 B, in use
// while it waits). So the reader waits before the read instead, when nothing is
// buffered: on the descriptor's readiness (over TLS, the TCP connection's under it),
// with the 2 KiB stack it started with. The collector halves a parked goroutine's
// stack only when what is in use and 800 B of headroom fit in a quarter of it, so a
// stack grown to 4 KiB stays 4 KiB. With the harness's ws section (cd caddytest && go
// run ./load -only ws -tls -waiters 12000 -instances 2 -clients 2), server memory per
// waiter went from 13.3 to 11.1 KiB over plain HTTP. Over TLS the reader must also know
// that crypto/tls holds nothing the client sent (tlsHoldsInput), a look through
// crypto/tls's read path, which grows a stack to 4 KiB: the first is taken by the
// upgrade's goroutine (Serve), which ends, and the reader takes one only after it has
// read a message, when its stack has grown anyway.

// awaitClient waits until the client has sent something, or its connection is over
// (false). It returns at once when bytes are already buffered above the descriptor,
// and when the socket is ending: the library's closing handshake then reads the
// connection from the writer (socket.write), and only the library's own lock keeps
// that read and the reader's apart. The ends are set under s.mu before that closing
// starts, so looking at the buffers under s.mu never meets it.
func (s *socket) awaitClient() bool {
	s.mu.Lock()
	if s.done || s.admitted || s.lost || s.left || s.closing {
		s.mu.Unlock()
		return true
	}
	raw := s.raw
	if s.underTLS != nil {
		raw = s.underTLS
	}
	buffered := s.br == nil || s.br.Buffered() > 0
	s.mu.Unlock()
	if raw == nil || buffered {
		return true
	}
	if s.underTLS != nil {
		looked := s.tlsLooked
		s.tlsLooked = false
		if !looked && s.mustReadTLS() {
			return true
		}
	}
	return awaitReadable(raw) == nil
}

// mustReadTLS reports whether the reader must read before it waits on the TCP
// connection's readiness: crypto/tls holds something the client sent, or the socket
// is ending. Not under s.mu: the peek may meet crypto/tls answering a KeyUpdate, a
// write bounded only by its deadline, and a push takes s.mu.
func (s *socket) mustReadTLS() bool {
	s.probing.Lock()
	defer s.probing.Unlock()
	s.mu.Lock()
	ending := s.done || s.admitted || s.lost || s.left || s.closing
	s.mu.Unlock()
	return ending || s.tlsHoldsInput()
}
