package queue

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// Store benchmarks: joins per second, and the cost of a join and of a position at
// growing queue lengths (it must stay flat: no scan of the queue anywhere).

var benchLimits = Limits{Capacity: 100, SessionTTL: time.Hour, QueueTTL: time.Hour}

func BenchmarkMemoryJoin(b *testing.B) {
	for _, queued := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("queued=%d", queued), func(b *testing.B) {
			s, now := filledStore(queued)
			ids := make([]VisitorID, b.N)
			for i := range ids {
				ids[i] = NewVisitorID()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_, _ = s.Join(context.Background(), ids[i], now, benchLimits)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "joins/s")
		})
	}
}

func BenchmarkMemoryJoinParallel(b *testing.B) {
	s, now := filledStore(10_000)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, _ = s.Join(context.Background(), NewVisitorID(), now, benchLimits)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "joins/s")
}

// BenchmarkMemoryPositions asks for 1,000 positions (a hub's push round for 1,000
// local waiters) in queues of growing length.
func BenchmarkMemoryPositions(b *testing.B) {
	for _, queued := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("queued=%d", queued), func(b *testing.B) {
			s, _ := filledStore(queued)
			tickets := make([]uint64, 1000)
			for i := range tickets {
				tickets[i] = s.base + uint64(i*queued/len(tickets))
			}
			out := make([]int, len(tickets))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_ = s.Positions(context.Background(), tickets, out)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(tickets)), "ns/position")
		})
	}
}

// BenchmarkMemoryBytesPerWaiter reports the heap the memory store holds per queued
// visitor (target <= 200 bytes).
func BenchmarkMemoryBytesPerWaiter(b *testing.B) {
	const n = 100_000
	for i := 0; i < b.N; i++ {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s, _ := filledStore(n)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "bytes/waiter")
		runtime.KeepAlive(s)
	}
}

// filledStore is a memory store at capacity with queued waiters behind it.
func filledStore(queued int) (*MemoryStore, time.Time) {
	s := NewMemoryStore()
	now := time.Unix(1_800_000_000, 0)
	for i := 0; i < benchLimits.Capacity+queued; i++ {
		_, _ = s.Join(context.Background(), NewVisitorID(), now, benchLimits)
	}
	return s, now
}
