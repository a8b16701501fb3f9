package queue

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// stateWriter and stateReader are the state file body's encoding: unsigned and signed
// varints, fixed 16-byte ids, and length-prefixed byte strings. The reader's error
// sticks, so a body is read straight through and checked once; no length it reads
// is trusted before it is checked against the bytes that remain, so a hostile or
// truncated body can never make it allocate more than the body's own size.
type stateWriter struct{ b []byte }

func (w *stateWriter) uint(v uint64)  { w.b = binary.AppendUvarint(w.b, v) }
func (w *stateWriter) int(v int64)    { w.b = binary.AppendVarint(w.b, v) }
func (w *stateWriter) byte(v byte)    { w.b = append(w.b, v) }
func (w *stateWriter) id(v VisitorID) { w.b = append(w.b, v[:]...) }
func (w *stateWriter) bytes(v []byte) { w.uint(uint64(len(v))); w.b = append(w.b, v...) }

// errShortBody is a body that ends inside a value.
var errShortBody = errors.New("ends early")

type stateReader struct {
	b   []byte
	err error
}

func (r *stateReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *stateReader) uint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(errShortBody)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *stateReader) int() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail(errShortBody)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *stateReader) byte() byte {
	if r.err != nil || len(r.b) < 1 {
		r.fail(errShortBody)
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *stateReader) id() VisitorID {
	var v VisitorID
	if r.err != nil || len(r.b) < len(v) {
		r.fail(errShortBody)
		return v
	}
	copy(v[:], r.b)
	r.b = r.b[len(v):]
	return v
}

// bytes reads a byte string, copied out of the body.
func (r *stateReader) bytes() []byte {
	n := r.uint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.fail(errShortBody)
		return nil
	}
	v := append([]byte(nil), r.b[:n]...)
	r.b = r.b[n:]
	return v
}

// count reads how many records of at least min bytes follow, refusing a count the
// remaining bytes cannot hold.
func (r *stateReader) count(what string, min int) int {
	n := r.uint()
	if r.err == nil && n > uint64(len(r.b)/min) {
		r.fail(fmt.Errorf("claims %d %s, more than its %d bytes can hold", n, what, len(r.b)))
	}
	if r.err != nil {
		return 0
	}
	return int(n)
}
