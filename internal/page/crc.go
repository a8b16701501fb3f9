package page

import "hash/crc32"

// A gzip page ends in the CRC-32 of the page, and running crc32.Update over the ~10 KB
// of static bytes for every request is most of what a gzip page costs (1 µs of 2).
// But what a fixed run of bytes does to a running CRC can be worked out once:
// crc32.Update(c, seg) is Update(0, seg) xor a function of c that is linear and
// depends only on len(seg) (c carried through as many zero bytes). Tabled by nibble,
// that is eight lookups per segment.

// crcShiftMin is the shortest segment worth a table: below it, Update is as quick.
const crcShiftMin = 128

// crcShift is what one static segment does to a running CRC-32 (IEEE).
type crcShift struct {
	crc   uint32        // crc32.Update(0, IEEETable, seg)
	table [8][16]uint32 // table[k][n]: the linear part for c = n<<(4*k)
}

func newCRCShift(seg []byte) *crcShift {
	s := &crcShift{crc: crc32.Update(0, crc32.IEEETable, seg)}
	var bit [32]uint32 // the linear part for each bit of c
	for i := range bit {
		bit[i] = crc32.Update(1<<i, crc32.IEEETable, seg) ^ s.crc
	}
	for k := range s.table {
		for n := range 16 {
			for b := range 4 {
				if n&(1<<b) != 0 {
					s.table[k][n] ^= bit[4*k+b]
				}
			}
		}
	}
	return s
}

// update is crc32.Update(c, crc32.IEEETable, seg).
func (s *crcShift) update(c uint32) uint32 {
	out := s.crc
	for k := range s.table {
		out ^= s.table[k][c>>(4*k)&15]
	}
	return out
}
