package capacity

import (
	"encoding/binary"
	"sync/atomic"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// A Meter is what this instance measured of the shop since it last took a sample:
// the admitted requests by time to first byte, their total time, and the failed
// ones. Adding is an atomic add to a bucket and one to the total, and, for each
// visitor's first requests of a period, a compare-and-swap on the visitor's slot, so
// the admitted hot path takes no lock; the Prometheus histogram is filled from the
// samples taken (Metrics.Measured), not request by request, so a request pays for
// one histogram.
//
// The control law reads visitors, not requests: of each visitor's requests in a
// control period, it reads the first PerVisitor (read); the rest (more) are in the
// metrics, but not in the reading. One admitted client flooding a cheap page (or a
// failing one) then weighs as one visitor making PerVisitor requests, and cannot
// outvote the others: with PerVisitor under half of MinReading, one visitor alone
// never makes a reading, nor most of one.
type Meter struct {
	read, more meterCounts
	total      atomic.Int64 // nanoseconds, of read and more
	visitors   visitorTable
}

// meterCounts are requests by time to first byte, and the failed ones.
type meterCounts struct {
	latency [queue.LatencyBuckets]atomic.Uint64
	failed  atomic.Uint64
}

// PerVisitor is how many of one visitor's requests in a control period the law
// reads, on one instance: more than a person's clicks and a page's own requests make
// in 2 s, so an honest visitor is read whole.
const PerVisitor = 8

// Add counts one request of visitor id's that the shop answered in d, failed or not.
func (m *Meter) Add(id queue.VisitorID, d time.Duration, failed bool) {
	c := &m.read
	if !m.visitors.count(id) {
		c = &m.more
	}
	c.latency[queue.LatencyBucket(d)].Add(1)
	m.total.Add(int64(d))
	if failed {
		c.failed.Add(1)
	}
}

// Take returns what was measured: what the control law reads, all of it, and its
// total time; and starts again from nothing, with a new period for the visitors'
// counts. A request measured while it runs lands in this sample or the next, never
// in both nor in neither (its total may land in the other one: a rounding of the
// Prometheus sum, never of the control law's reading).
func (m *Meter) Take() (read, all queue.Sample, total time.Duration) {
	m.visitors.epoch.Add(1)
	read = queue.Sample{Latency: make([]uint64, queue.LatencyBuckets), Failed: m.read.failed.Swap(0)}
	all = queue.Sample{Latency: make([]uint64, queue.LatencyBuckets), Failed: read.Failed + m.more.failed.Swap(0)}
	for i := range m.read.latency {
		read.Latency[i] = m.read.latency[i].Swap(0)
		all.Latency[i] = read.Latency[i] + m.more.latency[i].Swap(0)
	}
	return read, all, time.Duration(m.total.Swap(0))
}

// visitorTable counts each visitor's requests in the period the meter measures into,
// in a table of fixed size without a lock: a visitor's id (random, or derived by a
// keyed hash: the client cannot choose it) picks its slot, and a request claims the
// first of visitorProbes slots from there that is free this period or already the
// visitor's. A slot is one word: the period's epoch (16 bits), the visitor's tag (40
// bits of the id) and its count (8 bits), so a slot from an earlier period is free
// without being cleared. A visitor who finds no slot (more than the table holds came
// this period) is not read: the reading then holds the period's first visitors,
// which are plenty for a p90.
type visitorTable struct {
	// Every request reads the epoch: it sits on a cache line of its own, away from the
	// meter's total and the slots, which requests write.
	_     [64]byte
	epoch atomic.Uint64
	_     [56]byte
	slots [visitorSlots]atomic.Uint64
}

const (
	visitorSlots  = 1 << 13 // 64 KiB a room
	visitorProbes = 8
	tagBits       = 40
	tagMask       = 1<<tagBits - 1
)

// count counts one request of id's and says whether the period reads it.
func (vt *visitorTable) count(id queue.VisitorID) bool {
	epoch := vt.epoch.Load() & 0xffff
	tag := binary.LittleEndian.Uint64(id[8:]) & tagMask
	first := binary.LittleEndian.Uint32(id[:4])
	for p := range uint32(visitorProbes) {
		slot := &vt.slots[(first+p)%visitorSlots]
		for {
			v := slot.Load()
			switch {
			case v>>48 != epoch || v&0xff == 0: // free this period (a claimed slot counts at least 1)
				if slot.CompareAndSwap(v, epoch<<48|tag<<8|1) {
					return true
				}
				continue
			case v>>8&tagMask != tag: // another visitor's
			case v&0xff >= PerVisitor:
				return false
			default:
				if slot.CompareAndSwap(v, v+1) {
					return true
				}
				continue
			}
			break
		}
	}
	return false
}
