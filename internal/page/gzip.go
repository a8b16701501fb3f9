package page

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"slices"
	"sync"
)

// A frame's gzip twin: its static bytes compressed once, and per request only the
// holes' bytes written as they are, in DEFLATE's stored blocks. A gzip page then costs
// a copy and a checksum, where running a compressor for every queued visitor would
// cost more CPU than sending the ~6 KB it saves.
//
// Each static segment is a DEFLATE run of its own, with no references into the
// segments before it: such a reference would span the holes in between, whose width
// changes with every request's numbers. The page comes out ~17 % larger than gzip -9
// of the whole page (the script can no longer point back at the markup's names, and
// every segment has its own Huffman tables), which still leaves it under half the page.

// deflated is a frame's static segments compressed. Segment i (the static bytes
// before hole i) is runs[ends[i-1]:ends[i]]: compressed with a sync flush, whose empty
// stored block is cut after its header. The hole's LEN, NLEN and bytes complete that
// block, so a hole costs four bytes on the wire. The last segment's run is the end of
// the stream.
type deflated struct {
	runs   []byte
	ends   []int
	shifts []*crcShift // segment i's effect on the checksum (crc.go); nil when short
}

// crc is crc32.Update(c, crc32.IEEETable, seg) for seg, static segment i.
func (z *deflated) crc(c uint32, i int, seg []byte) uint32 {
	if s := z.shifts[i]; s != nil {
		return s.update(c)
	}
	return crc32.Update(c, crc32.IEEETable, seg)
}

// syncTail is the LEN and NLEN of the empty stored block a sync flush ends with.
var syncTail = []byte{0x00, 0x00, 0xff, 0xff}

// gzipHeader is a gzip member's header without a name, time or flags: DEFLATE, and
// "unknown" for the OS, as compress/gzip writes it.
var gzipHeader = [10]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255}

var errNoSyncTail = errors.New("a flushed DEFLATE run does not end in an empty stored block")

// deflaters keep flate writers between frame builds: a writer is a megabyte of
// tables, and an operator's page may build a frame per language and state.
var deflaters = sync.Pool{New: func() any {
	zw, _ := flate.NewWriter(io.Discard, flate.BestCompression) // the level is valid
	return zw
}}

// deflate compresses f's static segments.
func (f *frame) deflate() (*deflated, error) {
	var run bytes.Buffer
	zw := deflaters.Get().(*flate.Writer)
	defer deflaters.Put(zw)
	var err error
	z := &deflated{runs: make([]byte, 0, len(f.static)/2)}
	at := 0
	for i := 0; i <= len(f.cuts); i++ {
		end, last := len(f.static), i == len(f.cuts)
		if !last {
			end = f.cuts[i]
		}
		run.Reset()
		zw.Reset(&run) // a fresh window: see the top of this file
		if _, err := zw.Write(f.static[at:end]); err != nil {
			return nil, err
		}
		if last {
			err = zw.Close()
		} else {
			err = zw.Flush()
		}
		if err != nil {
			return nil, err
		}
		b := run.Bytes()
		if !last {
			if !bytes.HasSuffix(b, syncTail) {
				return nil, errNoSyncTail
			}
			b = b[:len(b)-len(syncTail)]
		}
		z.runs = append(z.runs, b...)
		z.ends = append(z.ends, len(z.runs))
		var shift *crcShift
		if end-at >= crcShiftMin {
			shift = newCRCShift(f.static[at:end])
		}
		z.shifts = append(z.shifts, shift)
		at = end
	}
	return z, nil
}

// appendGzip writes d's page to dst as a gzip member: what appendTo writes, compressed.
// It reports false, and returns dst as it came, when a hole is too long for a stored
// block (a caller's nonce of 64 KiB).
func (f *frame) appendGzip(dst []byte, d *Data) ([]byte, bool) {
	z := f.gz
	start := len(dst)
	dst = slices.Grow(dst, len(gzipHeader)+len(z.runs)+(4+32)*len(f.holes)+8)
	dst = append(dst, gzipHeader[:]...)
	var crc uint32
	size := len(f.static)
	at, runAt := 0, 0
	for i, h := range f.holes {
		dst = append(dst, z.runs[runAt:z.ends[i]]...)
		runAt = z.ends[i]
		crc = z.crc(crc, i, f.static[at:f.cuts[i]])
		at = f.cuts[i]

		lenAt := len(dst)
		dst = f.appendHole(append(dst, 0, 0, 0, 0), h, d)
		n := len(dst) - lenAt - 4
		if n > math.MaxUint16 {
			return dst[:start], false
		}
		binary.LittleEndian.PutUint16(dst[lenAt:], uint16(n))
		binary.LittleEndian.PutUint16(dst[lenAt+2:], ^uint16(n))
		crc = crc32.Update(crc, crc32.IEEETable, dst[lenAt+4:])
		size += n
	}
	dst = append(dst, z.runs[runAt:]...)
	crc = z.crc(crc, len(f.holes), f.static[at:])
	dst = binary.LittleEndian.AppendUint32(dst, crc)
	return binary.LittleEndian.AppendUint32(dst, uint32(size)), true
}

// gunzips reports whether gz is one gzip member, and it decompresses to exactly plain.
func gunzips(gz, plain []byte) bool {
	r := bytes.NewReader(gz)
	zr, err := gzip.NewReader(r)
	if err != nil {
		return false
	}
	zr.Multistream(false)
	out, err := io.ReadAll(zr)
	return err == nil && r.Len() == 0 && bytes.Equal(out, plain)
}
