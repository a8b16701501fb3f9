package push

import (
	"errors"
	"os"
	"time"
)

// Over TLS the bytes on the wire are not our frame's, and only the *tls.Conn may write
// them: a push to a TLS socket goes to the socket's writer, which seals and writes it
// under a deadline (socket.sendHeld), never on the hub's goroutine. The connection's
// write lock is crypto/tls's, and a client can make another goroutine hold it: a TLS
// 1.3 client that asks for a KeyUpdate and stops reading parks crypto/tls's answer,
// written from the socket's reader with that lock held, on its full buffers. A write
// that waited for the lock on the hub's goroutine held every waiter of the instance
// (TestTLSClientStallingKeyUpdatesHoldsOnlyItsOwnSocket); on the writer's it holds
// only that socket, until the deadline ends the parked write and the socket with it.
// The deadline each write sets is left in place, so that crypto/tls's own answer,
// which no code of ours wraps, is bounded by the one the last push left (pushes go out
// at least every maxSilence, well within writeTimeout).
//
// The cost, against writing a TLS push on the hub's goroutine: a goroutine per message,
// whose copy of the frame comes from a pool (TestTLSPushAllocatesOnlyTheWritersCopy),
// and crypto/tls's handshake buffers (the ClientHello's 2 KiB, the handshake's 1.5 KiB),
// which only writing its private fields could let go of. With the harness's ws section
// at 10,000 waiters (cd caddytest && go run ./load -only ws -tls -waiters 10000
// -instances 2 -clients 2), every TLS waiter was still told within 2 s (p99 1.75 s
// idle, 1.0 s with the line moving), at 18 µs of Caddy's CPU per TLS message (11-14 µs
// plain) and 20.1-20.5 KiB of server memory per TLS waiter, its idle socket parked
// with no goroutine (idle.go): a few hundred bytes over the 20 KiB target, nearly all
// of the difference from plain's 8 KiB being crypto/tls's own state (docs/performance.md,
// "Over TLS").

// aLongTimeAgo is a read deadline that has passed: a read under it takes only what is
// already above the descriptor.
var aLongTimeAgo = time.Unix(1, 0)

// tlsHoldsInput reports whether the TLS connection under the socket holds something
// the client sent that the descriptor's readiness cannot show: crypto/tls reads
// records ahead into its own buffer, and a record read with the last message may hold
// the next. It reads under a deadline that has passed, so it takes only what crypto/tls
// holds, into the library's read buffer, where the library's read finds it. Reader
// goroutine only, with s.probing held: the library's closing handshake reads that
// buffer too (socket.write).
func (s *socket) tlsHoldsInput() bool {
	if s.conn.SetReadDeadline(aLongTimeAgo) != nil {
		return true // let the read find what is wrong
	}
	_, err := s.br.Peek(1)
	if s.conn.SetReadDeadline(time.Time{}) != nil {
		return true
	}
	return !errors.Is(err, os.ErrDeadlineExceeded)
}
