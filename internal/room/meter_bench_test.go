package room

import (
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// What the meter costs an admitted request: one visitor's requests from every core
// (past its perVisitor, as most of a busy visitor's are), and many visitors' (each
// claiming its slot).
func BenchmarkMeterAddOneVisitor(b *testing.B) {
	m := new(meter)
	id := queue.NewVisitorID()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.add(id, time.Millisecond, false)
		}
	})
}

func BenchmarkMeterAddManyVisitors(b *testing.B) {
	m := new(meter)
	ids := make([]queue.VisitorID, 1024)
	for i := range ids {
		ids[i] = queue.NewVisitorID()
	}
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			m.add(ids[i%len(ids)], time.Millisecond, false)
			i++
			if i%(len(ids)*perVisitor) == 0 {
				m.visitors.epoch.Add(1) // a new period: every slot to claim again
			}
		}
	})
}
