package push

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// A waiter whose position does not move still hears from the room at least every
// maxSilence (the README's "at least every 2 s"), although messages go out only at
// the hub's ticks and ticks fire a little early or late: here up to a quarter tick
// either way, over 4,000 ticks. And the room does not chatter: an unchanged position
// goes out at most once per resendAfter, whatever else changes (the people waiting
// and the ETA ride along; see due).
func TestUnchangedPositionIsResentWithinMaxSilence(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var s socket
	const position = 7
	start := time.Unix(1_800_000_000, 0)
	last := start
	if !s.due(position, start, changeGap(1)) {
		t.Fatal("a new socket's first position was not due")
	}
	sent := 1
	const ticks = 4000
	for k := 1; k <= ticks; k++ {
		jitter := time.Duration(rng.Int64N(int64(resendEvery/2))) - resendEvery/4
		now := start.Add(time.Duration(k)*resendEvery + jitter)
		if !s.due(position, now, changeGap(1)) {
			continue
		}
		if gap := now.Sub(last); gap > maxSilence-resendSlack+resendEvery/2 {
			t.Fatalf("tick %d: the waiter heard nothing for %v (promised: at most %v, less the slack)", k, gap, maxSilence)
		} else if gap < resendAfter {
			t.Fatalf("tick %d: an unchanged position went out again after only %v", k, gap)
		}
		last = now
		sent++
	}
	if most := ticks*int(resendEvery)/int(resendAfter) + 1; sent > most {
		t.Fatalf("%d messages over %d ticks of an unchanged position; at most %d expected", sent, ticks, most)
	}
	// On time, the silence is one tick past resendAfter at most: no message is spent early.
	if least := ticks*int(resendEvery)/int(resendAfter+resendEvery+resendEvery/2) - 1; sent < least {
		t.Fatalf("%d messages over %d ticks; an on-time resend makes at least %d", sent, ticks, least)
	}

	// A change goes out at the next round, however recent the last message.
	if !s.due(position-1, last.Add(pushEvery), changeGap(1)) {
		t.Fatal("a changed position was held back")
	}
}

// allStacks is every goroutine's stack, as runtime.Stack writes them: one block a
// goroutine, blocks apart by a blank line.
func allStacks() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}

// serverGoroutines counts the goroutines running fn (a function of this package, as
// runtime.Stack names it) somewhere on their stacks.
func serverGoroutines(fn string) int {
	count := 0
	for g := range strings.SplitSeq(allStacks(), "\n\n") {
		for line := range strings.SplitSeq(g, "\n") {
			if strings.Contains(line, "push."+fn+"(") && !strings.HasPrefix(line, "created by ") {
				count++
				break
			}
		}
	}
	return count
}

// awaitParked waits until n of tr's sockets are parked in the hub's idle watch, and no
// reader of its sockets runs, nor an upgrade's handler.
func awaitParked(t *testing.T, tr *testRoom, n int, what string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		parked, readers, handlers := tr.hub.idle.parkedCount(), serverGoroutines("(*socket).read"), serverGoroutines("(*Hub).Serve")
		if parked == n && readers == 0 && handlers == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d sockets parked, %d readers and %d upgrade handlers running; want %d, 0, 0",
				what, parked, readers, handlers, n)
		}
	}
}

// A waiting socket must be cheap: at 100,000 waiters, goroutines would be most of what
// the server holds. Once upgraded, the request's handler returns (its goroutine, deep
// stack and request state go back) and an idle socket keeps no goroutine: its reader
// runs only while the client has something to say (off Linux it waits in its read),
// the writer only while there is news. The sockets still get their news: a position
// when someone ahead leaves, "admitted" when their turn comes.
func TestIdleSocketsKeepNoGoroutine(t *testing.T) {
	const waiters = 20
	tr := newTestRoom(t, 1)
	holder := tr.join()
	var returned atomic.Int64
	srv := serveRoom(t, tr, func() { returned.Add(1) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	var conns []*websocket.Conn
	for i := range waiters {
		cookie := tr.join()
		c := dialWaiter(ctx, t, tr, srv, cookie)
		defer c.CloseNow()
		if m := readView(ctx, t, c); m.Position != i+1 {
			t.Fatalf("waiter %d's first position is %d", i+1, m.Position)
		}
		conns = append(conns, c)
	}
	wantReaders := 0
	if runtime.GOOS != "linux" {
		wantReaders = waiters
	}
	// The first position can reach the client a moment before its upgrade handler has
	// returned (the writer goroutine sends it), so the counts are awaited, not read once.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		readers, writers, handlers := serverGoroutines("(*socket).read"), serverGoroutines("(*socket).write"), serverGoroutines("(*Hub).Serve")
		n := returned.Load()
		if n == waiters && readers == wantReaders && writers == 0 && handlers == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d idle sockets: %d upgrade requests returned; %d readers, %d writers and %d handlers; want %d, %d, 0, 0",
				waiters, n, readers, writers, handlers, waiters, wantReaders)
		}
	}

	// The first waiter leaves: everyone behind moves up, at the next push round.
	if err := conns[0].Write(ctx, websocket.MessageText, []byte(`{"type":"leave"}`)); err != nil {
		t.Fatal(err)
	}
	for i, c := range conns[1:] {
		for {
			if m := readView(ctx, t, c); m.Position == i+1 {
				break
			}
		}
	}
	// The holder goes: the new head is told at once.
	left, err := tr.store.Leave(ctx, visitorID(t, holder))
	if err != nil || !left {
		t.Fatalf("the holder did not leave: %v %v", left, err)
	}
	tr.step()
	for {
		if m := readView(ctx, t, conns[1]); m.Type == "admitted" {
			break
		}
	}
}

// A client may send its first message right behind the upgrade request, before it has
// read the answer; the bytes net/http had already read are handed to the socket, so
// that message counts (here: a leave gives up the place).
func TestMessageSentWithTheUpgradeIsRead(t *testing.T) {
	tr := newTestRoom(t, 1)
	tr.join()
	cookie := tr.join()
	srv := serveRoom(t, tr, nil)

	// One write: the frame arrives with the request.
	conn := rawUpgrade(t, srv, cookie, maskedText(`{"type":"leave"}`))
	defer conn.Close()
	awaitLeft(t, tr, cookie, "the leave sent with the upgrade was not read")
}

func readView(ctx context.Context, t *testing.T, c *websocket.Conn) page.View {
	t.Helper()
	_, data, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var v page.View
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("not a message of the room: %q", data)
	}
	return v
}

// A config going away (reload, stop) closes every waiting socket with 1012, which the
// page takes as "reconnect": its place is kept. Idle sockets have no writer running;
// the close must still go out.
func TestCleanupTellsSocketsToReconnect(t *testing.T) {
	tr := newTestRoom(t, 1)
	tr.join()
	srv := serveRoom(t, tr, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var conns []*websocket.Conn
	for range 3 {
		cookie := tr.join()
		c := dialWaiter(ctx, t, tr, srv, cookie)
		defer c.CloseNow()
		readView(ctx, t, c)
		conns = append(conns, c)
	}
	tr.hub.CloseAll()
	for i, c := range conns {
		for {
			_, _, err := c.Read(ctx)
			if err == nil {
				continue // a position that was on its way
			}
			if got := websocket.CloseStatus(err); got != websocket.StatusServiceRestart {
				t.Fatalf("socket %d ended with %v (status %d), want 1012", i, err, got)
			}
			break
		}
	}
}

// A client that stops reading costs the server a writer for writeTimeout, not forever:
// the write gives up, and the socket is let go. (The bound is a deadline on the
// connection: see send.)
func TestStalledClientWriteGivesUp(t *testing.T) {
	ctx, c, s := connectedWaiter(t, 30*time.Second)
	readView(ctx, t, c) // and nothing more: the client stalls
	// More than the kernel buffers of both ends hold, so the write must block.
	done := make(chan bool, 1)
	go func() { done <- s.send(make([]byte, 64<<20)) }()
	select {
	case ok := <-done:
		if ok {
			t.Fatal("64 MiB went to a client that reads nothing")
		}
	case <-ctx.Done():
		t.Fatal("a write to a stalled client never gave up")
	}
}

// awaitLeft waits until the waiter whose room cookie is cookie has left the line (the
// store no longer knows it), and fails with what when it has not within 10 s.
func awaitLeft(t *testing.T, tr *testRoom, cookie, what string) {
	t.Helper()
	id := visitorID(t, cookie)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		st, err := tr.store.Status(context.Background(), id, tr.Now())
		if err != nil {
			t.Fatal(err)
		}
		if st.State == queue.Unknown {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the waiter is still %v", what, st.State)
		}
	}
}

// rawUpgrade opens the waiting WebSocket of the waiter whose room cookie is cookie by
// hand, on a TCP connection, writing after right behind the upgrade request in the same
// write, and returns the connection once the upgrade is answered.
func rawUpgrade(t *testing.T, srv *httptest.Server, cookie string, after []byte) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	request := fmt.Sprintf("GET / HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: %s\r\n"+
		"Cookie: %s=%s\r\n\r\n", strings.TrimPrefix(srv.URL, "http://"), Subprotocol, cookieName, cookie)
	if _, err := conn.Write(append([]byte(request), after...)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	return conn
}

// maskedText is a client's text frame of msg (clients mask every frame).
func maskedText(msg string) []byte {
	mask := [4]byte{1, 2, 3, 4}
	frame := append([]byte{0x81, 0x80 | byte(len(msg))}, mask[:]...)
	for i := range len(msg) {
		frame = append(frame, msg[i]^mask[i%4])
	}
	return frame
}

// dialTLSWaiter serves tr over TLS and opens the waiting WebSocket of the waiter whose
// room cookie is cookie. The server, the connection and ctx end with the test.
func dialTLSWaiter(t *testing.T, tr *testRoom, cookie string) (context.Context, *websocket.Conn) {
	t.Helper()
	srv := httptest.NewUnstartedServer(serveRoom(t, tr, nil).Config.Handler)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	c := dialWaiter(ctx, t, tr, srv, cookie)
	t.Cleanup(func() { c.CloseNow() })
	return ctx, c
}

// connectedTLSWaiter is connectedWaiter over TLS: one waiter behind the head of a room
// whose hub does not run, its waiting WebSocket open, and its socket.
func connectedTLSWaiter(t *testing.T) (context.Context, *websocket.Conn, *socket) {
	t.Helper()
	tr := newRoom(t, 1, false)
	tr.join()
	ctx, c := dialTLSWaiter(t, tr, tr.join())
	return ctx, c, onlySocket(t, tr)
}

// dialWaiter opens the waiting WebSocket of the waiter whose room cookie is cookie, over
// TLS when srv was started with it ("https" becomes "wss").
func dialWaiter(ctx context.Context, t *testing.T, tr *testRoom, srv *httptest.Server, cookie string) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), &websocket.DialOptions{
		Subprotocols: []string{Subprotocol},
		HTTPClient:   srv.Client(),
		HTTPHeader:   http.Header{"Cookie": {cookieName + "=" + cookie}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A text message that is not UTF-8 fails the connection with status 1007 (RFC 6455
// 8.1), and the waiter keeps the place; UTF-8 beyond ASCII is text like any other.
func TestTextThatIsNotUTF8ClosesWith1007(t *testing.T) {
	tr := newTestRoom(t, 1)
	tr.join()
	cookie := tr.join()
	srv := serveRoom(t, tr, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := visitorID(t, cookie)
	before, err := tr.store.Status(ctx, id, tr.Now())
	if err != nil {
		t.Fatal(err)
	}

	c := dialWaiter(ctx, t, tr, srv, cookie)
	defer c.CloseNow()
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"grüße"}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.Write(ctx, websocket.MessageText, []byte("{\"type\":\"\xff\xfe\"}")); err != nil {
		t.Fatal(err)
	}
	for {
		_, _, err := c.Read(ctx)
		if err == nil {
			continue // positions
		}
		if code := websocket.CloseStatus(err); code != websocket.StatusInvalidFramePayloadData {
			t.Fatalf("after text that is not UTF-8 the connection ended with %v (status %d); want status 1007", err, code)
		}
		break
	}
	after, err := tr.store.Status(ctx, id, tr.Now())
	if err != nil || after.State != queue.Queued || after.Ticket != before.Ticket {
		t.Fatalf("the waiter went from %+v to %+v (%v)", before, after, err)
	}
}
