package redisstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// The away benchmarks: a queue of n waiters of whom every other one has gone quiet
// (away, keeping the place). Joins, positions and a waiter's status must cost what
// they cost without away waiters, whatever n.

// halfAway fills the room with n waiters (queued at now) and sends every other one
// away: the rest are heard from just before queue_ttl, and steps run just after it
// until the sweep has passed over the whole queue. It returns the waiters, their
// tickets, and the time the queue is in that state.
func halfAway(b *testing.B, s *roomStore, n int) ([]queue.VisitorID, []uint64, time.Time) {
	b.Helper()
	ctx := context.Background()
	ids, tickets := fillQueue(b, s, n)
	start := time.Now()
	present := make([]queue.VisitorID, 0, n/2)
	for i := 1; i < len(ids); i += 2 {
		present = append(present, ids[i])
	}
	lim := benchLimits
	lim.QueueTTL, lim.AwayTTL = time.Minute, 10*time.Minute
	if err := s.Heartbeat(ctx, present, start.Add(50*time.Second)); err != nil {
		b.Fatal(err)
	}
	at := start.Add(61 * time.Second)
	for {
		if _, err := s.Step(ctx, at, lim); err != nil {
			b.Fatal(err)
		}
		st, err := s.Stats(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if st.Away == (len(ids)+1)/2 {
			return ids, tickets, at
		}
		if st.Away > (len(ids)+1)/2 || st.Waiting+st.Away != len(ids) {
			b.Fatalf("sending half of %d away: %+v", len(ids), st)
		}
	}
}

// BenchmarkJoinHalfAway is BenchmarkJoinQueued behind a queue half of which is away.
func BenchmarkJoinHalfAway(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("queued=%d", n), func(b *testing.B) {
			srv, s := benchStore(b)
			halfAway(b, s, n)
			benchJoins(b, srv, s)
		})
	}
}

// BenchmarkStatusHalfAway asks where the last present waiter stands (a poll from the
// back of the line: the position counts the live bits before its ticket).
func BenchmarkStatusHalfAway(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("queued=%d", n), func(b *testing.B) {
			srv, s := benchStore(b)
			ids, _, at := halfAway(b, s, n)
			last := ids[len(ids)-1]
			if len(ids)%2 == 1 {
				last = ids[len(ids)-2] // the last one is away; asking would bring it back
			}
			ctx := context.Background()
			u0 := usageOf(b, srv)
			b.ResetTimer()
			for range b.N {
				st, err := s.Status(ctx, last, at)
				if err != nil || st.Position != n/2 {
					b.Fatalf("status of the last present waiter: %+v %v, want position %d", st, err, n/2)
				}
			}
			b.StopTimer()
			reportCommands(b, srv, u0, "status")
		})
	}
}

// BenchmarkPositionsHalfAway is BenchmarkPositions with every other waiter away.
func BenchmarkPositionsHalfAway(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("queued=%d", n), func(b *testing.B) {
			srv, s := benchStore(b)
			_, tickets, _ := halfAway(b, s, n)
			out := make([]int, len(tickets))
			ctx := context.Background()
			u0 := usageOf(b, srv)
			b.ResetTimer()
			for range b.N {
				if err := s.Positions(ctx, tickets, out); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			reportCommands(b, srv, u0, "call")
			if out[len(out)-1] != n/2 && out[len(out)-2] != n/2 {
				b.Fatalf("the last present waiter at %d, want %d", max(out[len(out)-1], out[len(out)-2]), n/2)
			}
		})
	}
}
