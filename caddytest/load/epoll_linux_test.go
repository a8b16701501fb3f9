package main

import (
	"net"
	"syscall"
	"testing"
	"time"
)

// The listener dates a message by when it reached the socket, not by when the client
// process got round to reading it: the receive time of a read that comes long after
// the bytes lies between the write and the moment just before the read.
func TestReceiveTimeIsWhenTheBytesArrived(t *testing.T) {
	client, server := loopbackPair(t)
	fd, err := detach(client)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1); err != nil {
		t.Fatal(err)
	}

	// exchange writes a message and reads it after a while, as a busy client would.
	exchange := func() (wrote, beforeRead, at time.Time, stamped bool) {
		t.Helper()
		wrote = time.Now()
		if _, err := server.Write([]byte("position")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // the client process is busy elsewhere
		beforeRead = time.Now()
		buf, oob := make([]byte, 64), make([]byte, 64)
		var n, oobn int
		for {
			n, oobn, _, _, err = syscall.Recvmsg(fd, buf, oob, 0)
			if err != syscall.EAGAIN {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if err != nil || string(buf[:n]) != "position" {
			t.Fatalf("read %q, %v", buf[:n], err)
		}
		at, stamped = receiveTime(oob[:oobn])
		return wrote, beforeRead, at, stamped
	}
	// The kernel turns receive stamps on a moment after the first socket asks (a
	// deferred switch), so the first messages may come without; the listener then takes
	// the read's time.
	for try := 0; ; try++ {
		if _, _, _, stamped := exchange(); stamped {
			break
		}
		if try == 50 {
			t.Fatal("no read carried a receive time")
		}
	}
	for round := range 3 {
		wrote, beforeRead, at, stamped := exchange()
		if !stamped {
			t.Fatalf("round %d: no receive time once stamps are on", round)
		}
		// Wall clock against wall clock: the kernel's stamp is CLOCK_REALTIME.
		if at.Before(wrote.Round(0).Add(-time.Millisecond)) || at.After(beforeRead.Round(0)) {
			t.Fatalf("round %d: received at %v; written at %v, read after %v", round, at, wrote, beforeRead)
		}
	}
	if _, ok := receiveTime(nil); ok {
		t.Fatal("a read without a control message has a receive time")
	}
	if _, ok := receiveTime(make([]byte, 8)); ok {
		t.Fatal("a truncated control message has a receive time")
	}
}

// Messages one read takes together are dated by the last of them (the kernel merges
// what waits unread), so the listener counts them: two frames that wait in the socket
// together count one, a frame alone counts none.
func TestMessagesReadTogetherAreCounted(t *testing.T) {
	client, server := loopbackPair(t)
	l, err := newListener(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	w := &heldWaiter{}
	if err := l.add(w, &waiterConn{c: client}); err != nil {
		t.Fatal(err)
	}
	frame := func(msg string) []byte { return append([]byte{0x81, byte(len(msg))}, msg...) }
	position := frame(`{"type":"position","position":3}`)
	counts := func(messages int) (heard, together int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			w.mu.Lock()
			heard = w.messages
			w.mu.Unlock()
			if heard >= messages || time.Now().After(deadline) {
				break
			}
		}
		l.mu.Lock() // the read that noted them is over: the loop reads under l.mu
		l.mu.Unlock()
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.messages, w.together
	}
	if _, err := server.Write(append(append([]byte{}, position...), position...)); err != nil {
		t.Fatal(err)
	}
	if heard, together := counts(2); heard != 2 || together != 1 {
		t.Fatalf("two frames in one segment: %d heard, %d read together with a later one; want 2 and 1", heard, together)
	}
	if _, err := server.Write(position); err != nil {
		t.Fatal(err)
	}
	if heard, together := counts(3); heard != 3 || together != 1 {
		t.Fatalf("then a frame alone: %d heard, %d read together; want 3 and 1", heard, together)
	}
}

// loopbackPair connects a client to a server over loopback TCP. The server's end is
// closed when the test ends; the client's is the test's to close or detach.
func loopbackPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			c = nil
		}
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("no connection accepted")
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}
