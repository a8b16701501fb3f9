package redisstore

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"

	"github.com/redis/go-redis/v9"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// The surge of TestClusterFailoverWithoutWait: joiners, an admitter, and what each
// acknowledged write told a visitor.

// Phases of the surge, in order.
const (
	phaseSynced   = iota // the replica follows its master
	phaseLagging         // the replica's link is cut (lagging-replica only)
	phaseKilled          // the master is dead; the replica is not master yet
	phaseAnswered        // the promoted replica answers the room
)

// An acknowledged write, as the surge saw it.
type ack struct {
	id     queue.VisitorID
	kind   string // join, admit (by a step), leave
	st     queue.Status
	sentAt int // phase when sent
	ackAt  int // phase when the reply had come back
}

type surge struct {
	s     *roomStore
	lim   queue.Limits
	phase atomic.Int32
	// skip moves the surge's clock on: after the failover it skips a session's life,
	// so that the slots still held by visitors whose leave was lost lapse, as they
	// would after session_ttl.
	skip atomic.Int64

	mu      sync.Mutex
	acks    []ack
	inside  []queue.VisitorID // admitted and not yet sent away, oldest first
	joins   [4]int            // acknowledged joins by phase
	admits  [4]int            // acknowledged admissions by phase (step or join)
	samples int               // Stats read after a step
	over    []string          // capacity exceeded, as seen by a sample
	failed  atomic.Int64      // calls that failed (the failover)
}

func (g *surge) now() time.Time { return time.Now().Add(time.Duration(g.skip.Load())) }

func (g *surge) record(a ack) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.acks = append(g.acks, a)
	switch {
	case a.kind == "join" && a.st.State == queue.Admitted, a.kind == "admit":
		g.admits[a.ackAt]++
		g.inside = append(g.inside, a.id)
	}
	if a.kind == "join" {
		g.joins[a.ackAt]++
	}
}

func (g *surge) counts(phase int) (joins, admits int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.joins[phase], g.admits[phase]
}

// join is one arrival, again and again, until stop.
func (g *surge) joiner(stop *atomic.Bool) {
	ctx := context.Background()
	for !stop.Load() {
		sent := int(g.phase.Load())
		id := queue.NewVisitorID()
		st, err := g.s.Join(ctx, id, g.now(), g.lim)
		if err != nil {
			g.failed.Add(1)
			time.Sleep(5 * time.Millisecond)
			continue
		}
		g.record(ack{id: id, kind: "join", st: st, sentAt: sent, ackAt: int(g.phase.Load())})
	}
}

// admitter sends the oldest visitor inside away and runs a step, again and again, and
// reads the room's counters after each step.
func (g *surge) admitter(stop *atomic.Bool) {
	ctx := context.Background()
	for !stop.Load() {
		sent := int(g.phase.Load())
		g.mu.Lock()
		var leaving *queue.VisitorID
		if len(g.inside) >= g.lim.Capacity/2 {
			leaving = &g.inside[0]
			g.inside = g.inside[1:]
		}
		g.mu.Unlock()
		if leaving != nil {
			if ok, err := g.s.Leave(ctx, *leaving); err != nil {
				g.failed.Add(1)
			} else if ok {
				g.record(ack{id: *leaving, kind: "leave", sentAt: sent, ackAt: int(g.phase.Load())})
			}
		}
		res, err := g.s.Step(ctx, g.now(), g.lim)
		if err != nil {
			g.failed.Add(1)
			time.Sleep(5 * time.Millisecond)
			continue
		}
		at := int(g.phase.Load())
		for _, id := range res.Admitted {
			g.record(ack{id: id, kind: "admit", st: queue.Status{State: queue.Admitted}, sentAt: sent, ackAt: at})
		}
		stats, err := g.s.Stats(ctx)
		if err != nil {
			g.failed.Add(1)
			continue
		}
		g.mu.Lock()
		g.samples++
		if stats.Active > g.lim.Capacity {
			g.over = append(g.over, fmt.Sprintf("phase %d: %d", at, stats.Active))
		}
		g.mu.Unlock()
	}
}

// waitFor lets the surge run until it has acknowledged joins and admissions in phase.
func (g *surge) waitFor(t *testing.T, phase, joins, admits int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second) // a harness bound, not a measure
	for {
		j, a := g.counts(phase)
		if j >= joins && a >= admits {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the surge acknowledged %d joins and %d admissions in phase %d, want %d and %d", j, a, phase, joins, admits)
		}
		time.Sleep(time.Millisecond)
	}
}

// roomNodes finds the master serving the room's hash slot and its replica.
func roomNodes(t *testing.T, cl *testredis.Cluster, key string) (master, replica *testredis.Server) {
	t.Helper()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: cl.Addrs[0]})
	defer rdb.Close()
	slot, err := rdb.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	ranges, err := rdb.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	byAddr := map[string]*testredis.Server{}
	for _, s := range cl.Servers {
		byAddr[s.Addr] = s
	}
	// CLUSTER SLOTS may not list a replica yet (not until its offset has gone round
	// the cluster bus); CLUSTER NODES names every replica's master.
	nodes, err := rdb.ClusterNodes(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ranges {
		if int64(r.Start) > slot || slot > int64(r.End) {
			continue
		}
		for line := range strings.SplitSeq(nodes, "\n") {
			f := strings.Fields(line)
			if len(f) > 3 && strings.Contains(f[2], "slave") && f[3] == r.Nodes[0].ID {
				return byAddr[r.Nodes[0].Addr], byAddr[strings.Split(f[1], "@")[0]]
			}
		}
	}
	t.Fatalf("no master with a replica serves slot %d: %+v\n%s", slot, ranges, nodes)
	return nil, nil
}
