package capacity

import (
	"io"
	"sync/atomic"
	"time"
)

// A Body is an admitted request's body as the shop reads it: it notes when the shop
// last got something of it (bytes, or its end) and whether reading it failed. So the
// shop's time to first byte counts from when it had the whole request (a slow upload
// is the client's time, not the shop's), and a body that could not be read (a
// malformed chunk, a client gone mid-upload, a body over a limit: the client's doing,
// or Caddy's) is nobody's measure of the shop. The proxy reads it on a goroutine of
// its own while the response's header may be written on the handler's, hence the
// atomics; a clock read per read of the body is nothing beside the read.
type Body struct {
	io.ReadCloser
	// Clock and Start time it: Start is when the request was handed on.
	Clock interface{ Now() time.Time }
	Start time.Time

	got    atomic.Int64 // when the last read returned something, in nanoseconds after Start (0: none yet)
	failed atomic.Bool  // reading it failed
}

func (b *Body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		b.failed.Store(true)
	} else if n > 0 || err == io.EOF {
		b.got.Store(max(int64(b.Clock.Now().Sub(b.Start)), 1))
	}
	return n, err
}

// TTFB is the shop's time to first byte for a response whose header is written now:
// from the last of the body it read (from Start when it read none, as a shop that
// answers without reading the body does). ok is false when reading the body failed.
func (b *Body) TTFB(now time.Time) (ttfb time.Duration, ok bool) {
	if b.failed.Load() {
		return 0, false
	}
	ttfb = now.Sub(b.Start)
	if got := b.got.Load(); got != 0 {
		ttfb -= time.Duration(got)
	}
	return max(ttfb, 0), true
}
