package queue

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/statefile"
)

// State file benchmarks: what a restore takes and what a save costs the hot path, on
// a sale's mix of visitors (docs/performance.md, "Durable memory store"):
//
//	go test -run '^$' -bench 'Restore|SaveHoldsTheLock' -benchtime 7x ./internal/queue/
//	go test -run '^$' -bench JoinWhileSaving -benchtime 10x ./internal/queue/

// stateRoom is the room the benchmarks' state files are written for.
const stateRoom = "sale"

// saleStore is a memory store of n visitors in a sale's mix: 5 % admitted sessions,
// 2 % in the pass lane, 10 % away, the rest present waiters, behind a full room. It
// returns the store, the time it is at, and the limits it was made with.
func saleStore(tb testing.TB, n int) (*MemoryStore, time.Time, Limits) {
	tb.Helper()
	ctx := context.Background()
	lim := Limits{Capacity: n / 20, SessionTTL: time.Hour, QueueTTL: time.Minute, AwayTTL: 10 * time.Minute}
	s := NewMemoryStore()
	now := time.Unix(1_800_000_000, 0)
	var away, present []VisitorID
	for i := range n {
		id := NewVisitorID()
		switch {
		case i < lim.Capacity:
			_, _ = s.Join(ctx, id, now, lim)
		case i%50 == 0: // the pass lane
			pass := PassUse{ID: fmt.Sprintf("pass-%d", i%500), Uses: 1 << 30, Expires: now.Add(24 * time.Hour)}
			_, _, _ = s.JoinPass(ctx, id, pass, now, lim)
			present = append(present, id)
		case i%10 == 1:
			_, _ = s.Join(ctx, id, now, lim)
			away = append(away, id)
		default:
			_, _ = s.Join(ctx, id, now, lim)
			present = append(present, id)
		}
	}
	// The away were heard from once, then fell silent past QueueTTL; the present
	// were heard from since.
	_ = s.Heartbeat(ctx, away, now)
	_ = s.Heartbeat(ctx, present, now.Add(50*time.Second))
	now = now.Add(61 * time.Second)
	_, _ = s.Step(ctx, now, lim)
	st, _ := s.Stats(ctx)
	if st.Active != lim.Capacity || st.Away != len(away) || st.Waiting+st.Away+st.Active != n {
		tb.Fatalf("%+v: want %d active, %d away, %d in all", st, lim.Capacity, len(away), n)
	}
	return s, now, lim
}

var stateSizes = []struct {
	name string
	n    int
}{{"100k", 100_000}, {"1M", 1_000_000}}

// BenchmarkRestore reads a sale's state file back into a store, as a start does:
// the file read, its checksum, the decoding and the line rebuilt. ns/op is one
// restore; bytes/waiter is the file's size over the visitors it holds.
func BenchmarkRestore(b *testing.B) {
	for _, size := range stateSizes {
		b.Run(size.name, func(b *testing.B) {
			s, now, _ := saleStore(b, size.n)
			file := filepath.Join(b.TempDir(), stateRoom+".state")
			if err := statefile.Write(file, s.AppendState(nil, stateRoom, now)); err != nil {
				b.Fatal(err)
			}
			fi, err := os.Stat(file)
			if err != nil {
				b.Fatal(err)
			}
			want, _ := s.Stats(context.Background())
			s = nil // only the restored store on the heap while timed
			b.ResetTimer()
			for range b.N {
				var got *MemoryStore
				from := statefile.Open(file, func(body []byte) (err error) {
					got, err = LoadMemoryStore(body, stateRoom, now.Add(time.Minute))
					return err
				}, func(f string, err error) { b.Fatalf("%s: %v", f, err) })
				if from != file {
					b.Fatalf("restored from %q", from)
				}
				if st, _ := got.Stats(context.Background()); st.Waiting != want.Waiting || st.Away != want.Away || st.Active != want.Active {
					b.Fatalf("restored %+v, saved %+v", st, want)
				}
			}
			b.ReportMetric(float64(fi.Size())/float64(size.n), "bytes/waiter")
			b.ReportMetric(float64(fi.Size())/1e6, "MB")
		})
	}
}

// BenchmarkSaveHoldsTheLock measures what a save costs the requests beside it: while
// each save (AppendState) runs, another goroutine joins new visitors (each leaving
// again) back to back, and the longest of those joins is about how long the save held
// the store's lock. ns/op is one save, the encoding included; join-max-ms is the
// median over the saves of that longest join, join-max-ms(without) the same over
// windows as long with no save, the machine's own noise.
func BenchmarkSaveHoldsTheLock(b *testing.B) {
	for _, size := range stateSizes {
		b.Run(size.name, func(b *testing.B) {
			s, now, lim := saleStore(b, size.n)
			var buf []byte
			var busy, quiet []float64
			var took time.Duration
			b.ResetTimer()
			for range b.N {
				t := time.Now()
				busy = append(busy, longestJoin(s, now, lim, func() { buf = s.AppendState(buf[:0], stateRoom, now) }))
				took += time.Since(t)
			}
			b.StopTimer()
			for range b.N {
				quiet = append(quiet, longestJoin(s, now, lim, func() { time.Sleep(took / time.Duration(b.N)) }))
			}
			b.ReportMetric(medianOf(busy), "join-max-ms")
			b.ReportMetric(medianOf(quiet), "join-max-ms(without)")
			b.ReportMetric(float64(len(buf))/float64(size.n), "body-bytes/waiter")
		})
	}
}

// longestJoin joins new visitors one after another while work runs, and returns the
// longest one took, in milliseconds.
func longestJoin(s *MemoryStore, now time.Time, lim Limits, work func()) float64 {
	ctx := context.Background()
	var longest time.Duration
	done, stopped := make(chan struct{}), make(chan struct{})
	started := make(chan struct{})
	go func() {
		defer close(stopped)
		close(started)
		for {
			select {
			case <-done:
				return
			default:
			}
			id := NewVisitorID()
			t := time.Now()
			_, _ = s.Join(ctx, id, now, lim)
			longest = max(longest, time.Since(t))
			_, _ = s.Leave(ctx, id) // the line stays the size it was
		}
	}()
	<-started
	work()
	close(done)
	<-stopped
	return float64(longest) / float64(time.Millisecond)
}

func medianOf(s []float64) float64 {
	s = slices.Clone(s)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkJoinWhileSaving is a steady line's traffic from every core (every op a
// new visitor's join and an earlier joiner's leave, so the store keeps its size), in
// pairs of rounds of a second that take turns: one with a save to a file (a Saver's
// Save, as its ticker calls it every second) in its middle, one without. Every op
// of b.N is one pair (-benchtime 10x); on/off is the median of the pairs' ratios, so
// a drift of the shared machine meets both sides alike.
func BenchmarkJoinWhileSaving(b *testing.B) {
	for _, size := range stateSizes {
		b.Run(size.name, func(b *testing.B) {
			s, now, lim := saleStore(b, size.n)
			saver := statefile.NewSaver(filepath.Join(b.TempDir(), stateRoom+".state"), time.Second,
				func(dst []byte) []byte { return s.AppendState(dst, stateRoom, now) }, nil, nil)
			save := func() {
				if err := saver.Save(); err != nil {
					b.Error(err)
				}
			}
			var on, off, ratios []float64
			b.ResetTimer()
			for i := range b.N {
				var a, c float64
				if i%2 == 0 {
					a, c = joinRound(s, now, lim, nil), joinRound(s, now, lim, save)
				} else {
					c, a = joinRound(s, now, lim, save), joinRound(s, now, lim, nil)
				}
				off, on, ratios = append(off, a), append(on, c), append(ratios, c/a)
			}
			b.StopTimer()
			b.ReportMetric(medianOf(off), "joins/s(no-save)")
			b.ReportMetric(medianOf(on), "joins/s(a-save)")
			b.ReportMetric(medianOf(ratios), "on/off")
		})
	}
}

// joinRound makes ops (a join and a leave) from GOMAXPROCS goroutines for a second,
// running save (if any) once in its middle, and returns the joins per second.
func joinRound(s *MemoryStore, now time.Time, lim Limits, save func()) float64 {
	const round = time.Second
	ctx := context.Background()
	var joins, took atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(round)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			var ring [256]VisitorID
			var n int64
			for i := 0; i%64 != 0 || time.Now().Before(end); i++ {
				if old := ring[i%len(ring)]; old != (VisitorID{}) {
					_, _ = s.Leave(ctx, old)
				}
				ring[i%len(ring)] = NewVisitorID()
				_, _ = s.Join(ctx, ring[i%len(ring)], now, lim)
				n++
			}
			joins.Add(n)
			for d := int64(time.Since(start)); ; { // the last joiner's end is the round's
				if t := took.Load(); t >= d || took.CompareAndSwap(t, d) {
					break
				}
			}
			for _, id := range ring {
				_, _ = s.Leave(ctx, id)
			}
		})
	}
	if save != nil {
		time.Sleep(round / 2)
		save()
	}
	wg.Wait()
	return float64(joins.Load()) / time.Duration(took.Load()).Seconds()
}

// TestSaleStoreRoundTrips holds the benchmarks' store to being what they say: its
// state restores to the same line, in the same order.
func TestSaleStoreRoundTrips(t *testing.T) {
	s, now, _ := saleStore(t, 2_000)
	got, err := LoadMemoryStore(s.AppendState(nil, stateRoom, now), stateRoom, now)
	if err != nil {
		t.Fatal(err)
	}
	line := func(s *MemoryStore) []VisitorID {
		var ids []VisitorID
		for _, v := range s.pass.slots {
			if v != nil {
				ids = append(ids, v.id)
			}
		}
		for _, v := range s.slots[s.head:] {
			if v != nil {
				ids = append(ids, v.id)
			}
		}
		return ids
	}
	if a, b := line(s), line(got); !slices.Equal(a, b) || len(a) != 2_000-100 {
		t.Fatalf("restored line of %d, saved %d (want %d), or out of order", len(b), len(a), 2_000-100)
	}
}
