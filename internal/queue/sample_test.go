package queue

import (
	"testing"
	"time"
)

// TestLatencyBucketBounds holds the buckets to what Percentile reads from them: every
// duration lies below its bucket's top and at or above the top of the bucket before,
// and a top is never more than an eighth above the duration.
func TestLatencyBucketBounds(t *testing.T) {
	for us := int64(0); us < 130_000_000; us = us + 1 + us/50 {
		d := time.Duration(us) * time.Microsecond
		i := LatencyBucket(d)
		if i < 0 || i >= LatencyBuckets {
			t.Fatalf("LatencyBucket(%v) = %d, outside [0, %d)", d, i, LatencyBuckets)
		}
		if i == LatencyBuckets-1 {
			continue // the last bucket holds everything from its start on
		}
		if top := BucketTop(i); d >= top {
			t.Fatalf("%v is in bucket %d whose top is %v", d, i, top)
		}
		if i > 0 && d < BucketTop(i-1) {
			t.Fatalf("%v is in bucket %d but below bucket %d's top %v", d, i, i-1, BucketTop(i-1))
		}
		if top := BucketTop(i); us >= 8 && float64(top-d) > float64(d)/8+float64(time.Microsecond) {
			t.Fatalf("bucket %d's top %v is more than an eighth above %v", i, top, d)
		}
	}
	if got := LatencyBucket(-time.Second); got != 0 {
		t.Fatalf("a negative duration is in bucket %d, want 0", got)
	}
	if got := LatencyBucket(time.Hour); got != LatencyBuckets-1 {
		t.Fatalf("an hour is in bucket %d, want the last, %d", got, LatencyBuckets-1)
	}
}

func TestPercentile(t *testing.T) {
	var s Sample
	if got := s.Percentile(0.9); got != 0 {
		t.Fatalf("empty sample's p90 = %v, want 0", got)
	}
	add := func(d time.Duration, n int) {
		o := Sample{Latency: make([]uint64, LatencyBuckets)}
		o.Latency[LatencyBucket(d)] = uint64(n)
		s.Add(o)
	}
	add(10*time.Millisecond, 89)
	add(time.Second, 11)
	// 89 fast, 11 slow: the 90th of 100 is slow.
	if got := s.Percentile(0.9); got < time.Second || got > time.Second*9/8 {
		t.Fatalf("p90 = %v, want about 1s", got)
	}
	if got := s.Percentile(0.5); got < 10*time.Millisecond || got > 12*time.Millisecond {
		t.Fatalf("p50 = %v, want about 10ms", got)
	}
	if s.Count() != 100 {
		t.Fatalf("count = %d, want 100", s.Count())
	}
}
