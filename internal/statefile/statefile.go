// Package statefile keeps the embedded store's state on disk: one file per room,
// replaced whole at every save, and written behind the hot path by a Saver, once a
// second and at a graceful stop. It frames a body it does not read (the memory
// store's, internal/queue/memory_state.go):
//
//	magic "cwrstate"(8) | version(2) | body length(8) | body | CRC-32C of all before(4)
//
// big-endian. A save goes to <file>.tmp, is synced, and then renamed over the file,
// whose previous save is kept as <file>.prev first: a crash leaves either save whole,
// and a file found damaged falls back to the one before it, and is kept aside as
// <file>.bad (KeepAside).
//
// The format is our own, not a library's: a whole snapshot, one sequential write,
// read back in one pass. A million waiters are 30 MB and are restored in about 0.6 s
// (BenchmarkRestore in internal/queue; docs/performance.md has the run), and the cost
// to the hot path is one copy of the state under the store's lock per save, about
// 20 ms at a million waiters (BenchmarkSaveHoldsTheLock). End to end, a Caddy saving
// half a million waiters every second serves joins and admitted visitors at 0.95 to
// 1.16 of the same Caddy with `file off`, over HTTP and TLS (cd caddytest && go run
// ./load -only durable -tls). An embedded key-value store (bbolt) would write a
// million keys per save or log every change, which the hot path would pay for; a
// snapshot pays once a second.
package statefile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
)

// Version is the state file version this build writes and reads. A file of a newer
// version is refused (ErrNewer), never guessed at: see CONTRIBUTING, "Formats across
// versions".
const Version = 1

const (
	magic   = "cwrstate"
	headLen = len(magic) + 2 + 8
	tailLen = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Errors that say what is wrong with a file.
var (
	ErrNotState  = errors.New("not a waiting room state file")
	ErrNewer     = errors.New("written by a newer version")
	ErrTruncated = errors.New("truncated")
	ErrCorrupt   = errors.New("corrupted: its checksum does not match")
)

// Frame is body framed as a state file.
func Frame(body []byte) []byte {
	head, tail := frame(body)
	return append(append(append(make([]byte, 0, headLen+len(body)+tailLen), head...), body...), tail...)
}

// frame is what goes before body and after it in its state file.
func frame(body []byte) (head, tail []byte) {
	head = append([]byte(magic), 0, 0)
	binary.BigEndian.PutUint16(head[len(magic):], Version)
	head = binary.BigEndian.AppendUint64(head, uint64(len(body)))
	sum := crc32.Update(crc32.Checksum(head, castagnoli), castagnoli, body)
	return head, binary.BigEndian.AppendUint32(nil, sum)
}

// Unframe is the body of a state file's bytes, or why there is none to trust.
func Unframe(b []byte) ([]byte, error) {
	if len(b) < len(magic) || !bytes.Equal(b[:len(magic)], []byte(magic)) {
		if len(b) < len(magic) && bytes.HasPrefix([]byte(magic), b) {
			return nil, ErrTruncated
		}
		return nil, ErrNotState
	}
	if len(b) < headLen {
		return nil, ErrTruncated
	}
	if v := binary.BigEndian.Uint16(b[len(magic):]); v > Version {
		return nil, fmt.Errorf("%w (version %d; this one reads %d)", ErrNewer, v, Version)
	} else if v == 0 {
		return nil, fmt.Errorf("%w: version 0", ErrNotState)
	}
	n := binary.BigEndian.Uint64(b[len(magic)+2:])
	switch rest := uint64(len(b) - headLen); {
	case rest < n+tailLen:
		return nil, ErrTruncated
	case rest > n+tailLen:
		return nil, fmt.Errorf("%w: %d bytes past its end", ErrCorrupt, rest-n-tailLen)
	}
	end := headLen + int(n)
	if crc32.Checksum(b[:end], castagnoli) != binary.BigEndian.Uint32(b[end:]) {
		return nil, ErrCorrupt
	}
	return b[headLen:end], nil
}

// Read is the body of the state file at path. A file that is not there is no error:
// body and error are both nil.
func Read(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return Unframe(b)
}

// Write replaces the state file at path with body framed, keeping the save it
// replaces as path.prev. The directory is made (0700) if need be, and the file is
// 0600: it holds the room's secret.
func Write(path string, body []byte) error {
	dir := dirOf(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	// Written in three parts, not framed into one buffer: a million waiters' body is
	// 30 MB, which a copy would fault in and zero every second.
	head, tail := frame(body)
	for _, part := range [][]byte{head, body, tail} {
		if err == nil {
			_, err = f.Write(part)
		}
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(path, path+".prev"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // the renames, durable; a file system that cannot sync a directory still renamed
		_ = d.Close()
	}
	return nil
}

func dirOf(path string) string { return filepath.Dir(path) }
