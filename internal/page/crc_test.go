package page

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// A segment's table carries any running checksum through it as Update would.
func TestCRCShiftIsUpdate(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 7, crcShiftMin, 1000, 4099} {
		seg := make([]byte, n)
		for i := range seg {
			seg[i] = byte(rng.Uint32())
		}
		s := newCRCShift(seg)
		for _, c := range []uint32{0, 1, 0xffffffff, 0x80000000, rng.Uint32(), rng.Uint32(), rng.Uint32()} {
			if got, want := s.update(c), crc32.Update(c, crc32.IEEETable, seg); got != want {
				t.Fatalf("%d bytes from %#08x: %#08x, Update makes %#08x", n, c, got, want)
			}
		}
	}
}
