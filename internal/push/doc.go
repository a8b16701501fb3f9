// Package push keeps a room's waiting WebSockets told: the hub of one room on one
// instance (hub.go), the push rounds that ask the store for every local waiter's
// position in one call and resend what is owed (pushround.go), the sockets and their
// writers (socket.go), and our own WebSocket text frames (wsframe.go). Every timing
// constant is in timing.go. A socket opened on an HTTP/2 or HTTP/3 stream (extended
// CONNECT) is shown to the library as an HTTP/1.1 upgrade (stream.go).
//
// coder/websocket does the handshake, reads the client, answers pings and writes the
// close; a push round writes positions itself, as one non-blocking write(2) of a frame
// of our own onto the plain TCP descriptor, instead of through the library's writer
// (a goroutine, two deadlines and the library's write path per message), which cost
// about 30% more CPU per message in the load harness's ws section at 100,000 waiters
// (go run ./load -only ws, from caddytest/): what is left is nearly all write(2)
// itself. Over TLS only the *tls.Conn may write, and a
// client can hold its write lock, so every TLS push goes to the socket's own writer,
// under a deadline, never on the hub's goroutine (tlssocket.go). TestTextFrameHeader and
// TestLibraryFramesAndPushedFramesDoNotInterleave hold our frames to coder/websocket's
// reader at the version in go.mod.
//
// An idle socket waits in its hub's own epoll instance (idle.go, idle_linux.go)
// rather than in a reader goroutine blocked in the library's read: a waiter's server
// memory is 8 KiB instead of 11.5 over plain HTTP, and 20 instead of 23 over TLS, in
// the load harness's ws section at 10,000 waiters (go run ./load -only ws -tls
// -waiters 10000 -instances 2 -clients 2, from caddytest/).
package push
