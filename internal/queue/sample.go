package queue

import (
	"math/bits"
	"time"
)

// Sample is what the admitted requests of one control period measured of the shop,
// on one instance or, added up, on all of them: how many there were by time to first
// byte, and how many failed. The room's adaptive capacity decides on it.
type Sample struct {
	// Latency counts the requests by their time to first byte: Latency[i] is how many
	// fell in bucket i (see LatencyBucket).
	Latency []uint64
	// Failed counts the requests that failed (a 5xx, or an error from the handler).
	Failed uint64
}

// Count is how many requests the sample holds.
func (s *Sample) Count() uint64 {
	var n uint64
	for _, c := range s.Latency {
		n += c
	}
	return n
}

// Add adds o's counts to s's.
func (s *Sample) Add(o Sample) {
	if len(o.Latency) > len(s.Latency) {
		s.Latency = append(s.Latency, make([]uint64, len(o.Latency)-len(s.Latency))...)
	}
	for i, c := range o.Latency {
		s.Latency[i] += c
	}
	s.Failed += o.Failed
}

// Latency buckets: 8 per doubling from 1µs, so a bucket's width is at most an eighth
// of its start (a p90 read from them is within 12.5 %), and the last one holds all
// from about two minutes on. The index takes a shift and a bit length, no logarithm:
// the admitted request adds to a bucket on the hot path.
const (
	subBuckets = 8
	// LatencyBuckets is how many buckets a Sample's Latency has at most.
	LatencyBuckets = subBuckets * 25
)

// LatencyBucket is d's bucket.
func LatencyBucket(d time.Duration) int {
	us := d.Microseconds()
	if us < subBuckets {
		return int(max(us, 0))
	}
	e := bits.Len64(uint64(us)) - 4 // us >> e is in [8, 16)
	i := subBuckets*(e+1) + int(uint64(us)>>e) - subBuckets
	return min(i, LatencyBuckets-1)
}

// BucketTop is the least duration above bucket i's: what a percentile falling in
// the bucket is read as, so an estimate errs on the slow side.
func BucketTop(i int) time.Duration {
	if i < subBuckets {
		return time.Duration(i+1) * time.Microsecond
	}
	e := i/subBuckets - 1
	m := uint64(i%subBuckets + subBuckets + 1)
	return time.Duration(m<<e) * time.Microsecond
}

// Percentile is the duration below which the share q (0.9 for the p90) of the
// sample's requests fell, read from the top of the bucket it lies in; 0 for an empty
// sample.
func (s *Sample) Percentile(q float64) time.Duration {
	n := s.Count()
	if n == 0 {
		return 0
	}
	rank := uint64(q*float64(n) + 0.5)
	rank = min(max(rank, 1), n)
	var seen uint64
	for i, c := range s.Latency {
		seen += c
		if seen >= rank {
			return BucketTop(i)
		}
	}
	return BucketTop(len(s.Latency) - 1)
}
