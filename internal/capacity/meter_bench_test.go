package capacity

import (
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// What the meter costs an admitted request: one visitor's requests from every core
// (past its PerVisitor, as most of a busy visitor's are), and many visitors' (each
// claiming its slot).
func BenchmarkMeterAddOneVisitor(b *testing.B) {
	m := new(Meter)
	id := queue.NewVisitorID()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Add(id, time.Millisecond, false)
		}
	})
}

func BenchmarkMeterAddManyVisitors(b *testing.B) {
	m := new(Meter)
	ids := make([]queue.VisitorID, 1024)
	for i := range ids {
		ids[i] = queue.NewVisitorID()
	}
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			m.Add(ids[i%len(ids)], time.Millisecond, false)
			i++
			if i%(len(ids)*PerVisitor) == 0 {
				m.visitors.epoch.Add(1) // a new period: every slot to claim again
			}
		}
	})
}
