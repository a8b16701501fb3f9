package queue

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// halfAwayStore is filledStore with every other waiter away: the others are heard just
// before QueueTTL, and a step just after it sends the rest away.
func halfAwayStore(b *testing.B, queued int) (*MemoryStore, time.Time, Limits) {
	b.Helper()
	s, now := filledStore(queued)
	lim := benchLimits
	lim.QueueTTL, lim.AwayTTL = time.Minute, 10*time.Minute
	var present []VisitorID
	for i := s.head; i < len(s.slots); i += 2 {
		present = append(present, s.slots[i].id)
	}
	_ = s.Heartbeat(context.Background(), present, now.Add(50*time.Second))
	now = now.Add(61 * time.Second)
	_, _ = s.Step(context.Background(), now, lim)
	if st, _ := s.Stats(context.Background()); st.Away != queued/2 {
		b.Fatalf("%+v, want %d away", st, queued/2)
	}
	return s, now, lim
}

func BenchmarkMemoryJoinHalfAway(b *testing.B) {
	for _, queued := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("queued=%d", queued), func(b *testing.B) {
			s, now, lim := halfAwayStore(b, queued)
			ids := make([]VisitorID, b.N)
			for i := range ids {
				ids[i] = NewVisitorID()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_, _ = s.Join(context.Background(), ids[i], now, lim)
			}
		})
	}
}

// BenchmarkMemoryStatusHalfAway asks where a waiter at the back of the line stands.
func BenchmarkMemoryStatusHalfAway(b *testing.B) {
	for _, queued := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("queued=%d", queued), func(b *testing.B) {
			s, now, _ := halfAwayStore(b, queued)
			last := s.slots[len(s.slots)-2].id // present (the last is away)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_, _ = s.Status(context.Background(), last, now)
			}
		})
	}
}

func BenchmarkMemoryPositionsHalfAway(b *testing.B) {
	for _, queued := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("queued=%d", queued), func(b *testing.B) {
			s, _, _ := halfAwayStore(b, queued)
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
