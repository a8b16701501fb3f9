package redisstore

import (
	"context"
	"fmt"
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
	var last uint64
	for i, id := range []queue.VisitorID{w1, w2} {
		st, err := s.Join(ctx, id, now, lim)
		if err != nil || st.State != queue.Queued || (i > 0 && st.Ticket != last+1) {
			t.Fatalf("waiter %d on one node: %+v %v (the one before: %d)", i+1, st, err, last)
		}
		last = st.Ticket
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
	// The skip, then the new busy period's pass lane (PASS_LANE in lua/prelude.lua)
	// before its first ordinary ticket.
	want := last + 65536 + 1 + 16384
	for i := range 3 {
		st, err := s.Join(ctx, queue.NewVisitorID(), now, lim)
		if err != nil || st.State != queue.Queued || st.Ticket != want+uint64(i) || st.Position != i+1 {
			t.Fatalf("join %d after the failover: %+v %v; want ticket %d at %d", i+1, st, err, want+uint64(i), i+1)
		}
	}
}

// A Redis restarted empty loses the room's counter with everything else. The counter
// starts again from the clock, so the tickets from before the restart, which waiters'
// instances still hold, are never handed out again and never name a newcomer's place.
func TestTicketsGrowPastAnEmptyRestart(t *testing.T) {
	srv := testredis.Start(t)
	s := open(t, provision(t, &Redis{URL: "redis://" + srv.Addr, Timeout: caddy.Duration(5 * time.Second)}))
	ctx, now := context.Background(), time.Now()
	lim := queue.Limits{Capacity: 1, SessionTTL: time.Hour, QueueTTL: time.Hour}
	var old []uint64
	for range 4 {
		st, err := s.Join(ctx, queue.NewVisitorID(), now, lim)
		if err != nil {
			t.Fatal(err)
		}
		if st.State == queue.Queued {
			old = append(old, st.Ticket)
		}
	}
	srv.Restart()
	for calls := 1; ; calls++ {
		if _, err := s.Stats(ctx); err == nil {
			break
		} else if calls == 10 {
			t.Fatalf("the store did not answer after the restart: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var fresh []uint64
	for range 4 {
		st, err := s.Join(ctx, queue.NewVisitorID(), now, lim)
		if err != nil {
			t.Fatal(err)
		}
		if st.State == queue.Queued {
			fresh = append(fresh, st.Ticket)
		}
	}
	if len(old) != 3 || len(fresh) != 3 {
		t.Fatalf("queued %d before the restart and %d after, want 3 and 3", len(old), len(fresh))
	}
	if fresh[0] <= old[len(old)-1] {
		t.Fatalf("tickets before the restart %v, after it %v: handed out again", old, fresh)
	}
	out := make([]int, len(old))
	if err := s.Positions(ctx, old, out); err != nil {
		t.Fatal(err)
	}
	for i, p := range out {
		if p != 0 {
			t.Fatalf("ticket %d from before the restart has position %d: a newcomer's place", old[i], p)
		}
	}
}

// INFO is in the @dangerous ACL category. A store whose user is denied it still joins
// visitors, one ticket after another: it only goes without the failover check.
func TestTicketGuardWithoutINFO(t *testing.T) {
	srv := testredis.Start(t)
	if _, err := srv.Do("ACL", "SETUSER", "room", "on", ">secret", "~*", "&*", "+@all", "-@dangerous"); err != nil {
		t.Fatal(err)
	}
	s := open(t, provision(t, &Redis{URL: "redis://room:secret@" + srv.Addr, Timeout: caddy.Duration(5 * time.Second)}))
	ctx, now := context.Background(), time.Now()
	lim := queue.Limits{Capacity: 1, SessionTTL: time.Hour, QueueTTL: time.Hour}
	var last uint64
	for i := range 3 {
		st, err := s.Join(ctx, queue.NewVisitorID(), now, lim)
		if err != nil {
			t.Fatalf("join %d by a user without INFO: %v", i+1, err)
		}
		if i > 1 && st.Ticket != last+1 { // the first is admitted, with no ticket
			t.Fatalf("join %d: ticket %d after %d", i+1, st.Ticket, last)
		}
		last = st.Ticket
	}
}

// The pass lane's tickets are lost in a failover like any others: the promoted replica's
// lane_next is behind the old master's. A pass holder joining there must not be handed
// the ticket a lost pass holder held, whose instance still asks Positions about it: the
// guard closes the lane of that busy period, and the pass holder joins at the back of
// the line, past the skip.
func TestPassLaneTicketsSkipPastAnotherNode(t *testing.T) {
	srv := testredis.Start(t)
	s := open(t, provision(t, &Redis{URL: "redis://" + srv.Addr, Timeout: caddy.Duration(5 * time.Second)}))
	ctx, now := context.Background(), time.Now()
	lim := queue.Limits{Capacity: 1, SessionTTL: time.Hour, QueueTTL: time.Hour}
	pass := func() queue.PassUse {
		return queue.PassUse{ID: queue.NewVisitorID().String(), Uses: 1, Expires: now.Add(time.Hour)}
	}
	if st, err := s.Join(ctx, queue.NewVisitorID(), now, lim); err != nil || st.State != queue.Admitted {
		t.Fatalf("holder: %+v %v", st, err)
	}
	ordinary, err := s.Join(ctx, queue.NewVisitorID(), now, lim)
	if err != nil || ordinary.State != queue.Queued {
		t.Fatalf("ordinary waiter: %+v %v", ordinary, err)
	}
	first, lost := queue.NewVisitorID(), queue.NewVisitorID()
	var tickets []uint64
	for _, id := range []queue.VisitorID{first, lost} {
		st, ok, err := s.JoinPass(ctx, id, pass(), now, lim)
		if err != nil || !ok || st.State != queue.Queued {
			t.Fatalf("pass holder: %+v %v %v", st, ok, err)
		}
		tickets = append(tickets, st.Ticket)
	}
	// The replica never got the second pass holder's join: its place, its live bit
	// and the lane's counter are as before it, and the room was written by another node.
	meta, live := s.keys[2], s.keys[3]
	base, err := srv.Do("HGET", meta, "base")
	if err != nil {
		t.Fatal(err)
	}
	var b uint64
	if _, err := fmt.Sscan(base, &b); err != nil {
		t.Fatalf("base %q: %v", base, err)
	}
	for _, cmd := range [][]string{
		{"ZREM", s.keys[0], string(lost[:])},
		{"SETBIT", live, fmt.Sprint(tickets[1] - b), "0"},
		{"HSET", meta, "lane_next", "1", "node", "0000000000000000000000000000000000000000", "node_at", "0"},
	} {
		if _, err := srv.Do(cmd...); err != nil {
			t.Fatal(err)
		}
	}
	st, ok, err := s.JoinPass(ctx, queue.NewVisitorID(), pass(), now, lim)
	if err != nil || !ok || st.State != queue.Queued {
		t.Fatalf("pass holder after the failover: %+v %v %v", st, ok, err)
	}
	if st.Ticket == tickets[1] || st.Ticket <= ordinary.Ticket+65536 {
		t.Fatalf("the pass holder after the failover got ticket %d: the lost pass holder had %d, the last ordinary ticket was %d", st.Ticket, tickets[1], ordinary.Ticket)
	}
	if st.Position != 3 {
		t.Fatalf("the pass holder after the failover is at %d, want 3 (behind the first pass holder and the ordinary waiter)", st.Position)
	}
}
