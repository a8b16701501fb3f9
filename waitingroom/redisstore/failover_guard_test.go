package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// The ticket guard (failover.go) on one server: meta says the room's last tickets came
// from another node, as it does on a promoted replica, so the next join skips past
// the tickets that node may have handed out, even when that join is admitted and
// queues nobody; tickets then run on one by one, and a node that stays the same never
// skips.
func TestTicketsSkipPastAnotherNode(t *testing.T) {
	srv := testredis.Start(t)
	s := open(t, provision(t, &Redis{URL: "redis://" + srv.Addr, Timeout: caddy.Duration(5 * time.Second)}))
	ctx, now := context.Background(), time.Now()
	lim := queue.Limits{Capacity: 1, SessionTTL: time.Hour, QueueTTL: time.Hour}
	holder := queue.NewVisitorID()
	if st, err := s.Join(ctx, holder, now, lim); err != nil || st.State != queue.Admitted {
		t.Fatalf("holder: %+v %v", st, err)
	}
	w1, w2 := queue.NewVisitorID(), queue.NewVisitorID()
	for i, id := range []queue.VisitorID{w1, w2} {
		if st, err := s.Join(ctx, id, now, lim); err != nil || st.Ticket != uint64(i+1) {
			t.Fatalf("waiter %d on one node: %+v %v", i+1, st, err)
		}
	}

	// The room as a promoted replica finds it: written by another node, a while ago.
	if _, err := srv.Do("HSET", s.keys[2], "node", "0000000000000000000000000000000000000000", "node_at", "0"); err != nil {
		t.Fatal(err)
	}
	// Everyone leaves, so the next join is admitted and issues no ticket itself.
	for _, id := range []queue.VisitorID{holder, w1, w2} {
		if ok, err := s.Leave(ctx, id); err != nil || !ok {
			t.Fatalf("leave: %v %v", ok, err)
		}
	}
	if st, err := s.Join(ctx, queue.NewVisitorID(), now, lim); err != nil || st.State != queue.Admitted {
		t.Fatalf("the first join after the failover: %+v %v", st, err)
	}
	want := uint64(2 + 65536 + 1)
	for i := range 3 {
		st, err := s.Join(ctx, queue.NewVisitorID(), now, lim)
		if err != nil || st.State != queue.Queued || st.Ticket != want+uint64(i) || st.Position != i+1 {
			t.Fatalf("join %d after the failover: %+v %v; want ticket %d at %d", i+1, st, err, want+uint64(i), i+1)
		}
	}
}
