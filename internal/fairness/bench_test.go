package fairness

import (
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// A waiter's receipt as an answer gives it: signed the first time (Ed25519 and the
// canonical form), and from the instance's cache after that, while the waiter's draw,
// ticket and place are the same.
//
//	go test -run '^$' -bench Receipt ./internal/fairness/
func BenchmarkReceipt(b *testing.B) {
	d := instance(nil, "drop")
	since := time.Date(2031, 6, 1, 10, 0, 0, 0, time.UTC)
	b.Run("signed", func(b *testing.B) {
		ticket := uint64(0)
		for b.Loop() {
			ticket++
			if r, _ := d.Receipt(Holder{ID: queue.NewVisitorID(), Ticket: ticket, Since: since}); r == nil {
				b.Fatal("no receipt")
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		h := Holder{ID: queue.NewVisitorID(), Ticket: 7, Since: since}
		d.Receipt(h)
		for b.Loop() {
			if r, _ := d.Receipt(h); r == nil {
				b.Fatal("no receipt")
			}
		}
	})
}
