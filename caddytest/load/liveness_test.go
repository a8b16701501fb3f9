package main

import (
	"context"
	"os"
	"testing"
	"time"
)

// The liveness simulation at a tiny scale, on a real redis-server: with the hubs
// holding their waiters every one stays present and every position is exact (simulate
// checks both and fails otherwise), the line moves, and keeping the waiters alive costs
// Redis fewer commands than hearing of each of them, as the baseline does.
func TestLivenessSimulation(t *testing.T) {
	// queue_ttl 5 s: leases are renewed every 1.7 s, so a busy machine's stalls of a
	// few seconds do not send anyone away.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := &rig{ctx: ctx, o: options{quick: true}, dir: t.TempDir(), ports: map[int]bool{}}
	defer r.close()
	sc := livenessScale{sizes: []int{1_000}, baselineUpTo: 1_000, queueTTL: 5 * time.Second, window: 3 * time.Second, moving: 100}
	held, err := simulate(ctx, r, sc, 1_000, true)
	if err != nil {
		t.Fatal(err)
	}
	heard, err := simulate(ctx, r, sc, 1_000, false)
	if err != nil {
		t.Fatal(err)
	}
	printTable(os.Stderr, livenessRows(1_000, held, &heard), false)
	if held.idle.commands <= 0 || heard.idle.commands <= 0 {
		t.Fatalf("no Redis commands counted: held %+v, heard %+v", held.idle, heard.idle)
	}
	if held.idle.commands >= heard.idle.commands {
		t.Fatalf("holding 1,000 idle waiters cost Redis %.0f commands/s, hearing of each %.0f/s: holding must cost less",
			held.idle.commands, heard.idle.commands)
	}
}
