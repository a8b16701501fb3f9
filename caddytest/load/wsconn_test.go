package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

// The client's parser reads the same messages however the stream is cut into reads:
// frames of both header sizes, a ping answered on the way, the close frame last.
func TestFramesParseAcrossAnyReads(t *testing.T) {
	frame := func(op byte, payload string) []byte {
		f := []byte{0x80 | op}
		if len(payload) <= 125 {
			f = append(f, byte(len(payload)))
		} else {
			f = append(f, 126, 0, 0)
			binary.BigEndian.PutUint16(f[2:], uint16(len(payload)))
		}
		return append(f, payload...)
	}
	long := `{"type":"position","room":"` + string(bytes.Repeat([]byte{'r'}, 300)) + `"}`
	var stream []byte
	stream = append(stream, frame(0x1, `{"type":"position","position":3}`)...)
	stream = append(stream, frame(0x9, "hi")...)
	stream = append(stream, frame(0x1, long)...)
	stream = append(stream, frame(0x1, `{"type":"admitted"}`)...)
	stream = append(stream, frame(0x8, "\x03\xe8")...)
	want := []string{msgPosition, msgPosition, msgAdmitted}

	for cut := 1; cut <= len(stream); cut++ {
		var sent bytes.Buffer
		w := &waiterConn{out: &sent}
		rest := stream
		read := func(b []byte) (int, error) {
			if len(rest) == 0 {
				return 0, io.EOF
			}
			n := copy(b, rest[:min(cut, len(rest))])
			rest = rest[n:]
			return n, nil
		}
		buf := make([]byte, 2*maxServerMessage)
		var got []string
		var err error
		for {
			var kind string
			var ok bool
			if kind, ok, err = w.take(); err != nil {
				break
			}
			if ok {
				got = append(got, kind)
				continue
			}
			if err = w.receive(buf, read); err != nil {
				break
			}
		}
		var closed closeError
		if !errors.As(err, &closed) || closed.code != 1000 {
			t.Fatalf("reads of %d bytes: ended with %v, want the close frame's 1000", cut, err)
		}
		if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Fatalf("reads of %d bytes: messages %q, want %q", cut, got, want)
		}
		// A pong for the ping and the close reply, both masked as a client's must be.
		if sent.Len() != (6+2)+(6+2) || sent.Bytes()[0] != 0x8A || sent.Bytes()[1] != 0x82 {
			t.Fatalf("reads of %d bytes: the client wrote % x", cut, sent.Bytes())
		}
	}
}
