package fairness

import (
	"container/heap"
	"context"
	"slices"
	"sync"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/draw"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// A random draw's picks: the present waiters of the ordinary lane first in the draw's
// order, as many as the next step may let in and a few more. Each instance ranks the
// tickets it sees once (two HMACs a waiter) and keeps the ranks of the line's present
// waiters, ascending by ticket, from one step to the next: a step ranks only the
// waiters new to it. The store admits the first picks still present when the step
// runs (queue.Limits.Picks), so a waiter who comes back from away between the read
// and the step is picked at the next step.

// extraPicks are the picks beyond the free slots: a step may find more slots free
// than the last read of the counters said (a session that lapsed meanwhile).
const extraPicks = 8

type ranked struct {
	ticket uint64
	entry  draw.Entry
	rank   draw.Rank
}

type picker struct {
	mu      sync.Mutex
	draw    string
	line    []ranked // the present waiters as last read, ascending by ticket
	present []uint64
}

// picks are open random draw rec's picks for a step that may let in free.
func (d *Draws) picks(ctx context.Context, st queue.Store, rec *queue.DrawRecord, free int, fail func(string, error)) *queue.Picks {
	p := &d.picker
	p.mu.Lock()
	defer p.mu.Unlock()
	out := &queue.Picks{Draw: rec.ID}
	present, err := st.Present(ctx, p.present[:0])
	if err != nil {
		fail("reading the line for a random draw", err)
		return out // nobody from the line this step, rather than anyone at all
	}
	p.present = present
	if p.draw != rec.ID {
		p.draw, p.line = rec.ID, p.line[:0]
	}
	var e *entries
	var r *draw.Ranker
	line := make([]ranked, 0, len(present))
	j := 0
	for _, t := range present {
		for j < len(p.line) && p.line[j].ticket < t {
			j++
		}
		if j < len(p.line) && p.line[j].ticket == t {
			line = append(line, p.line[j])
			continue
		}
		if e == nil {
			e, r = newEntries(rec.EntryKey[:]), draw.NewRanker(rec.Seed)
		}
		x := ranked{ticket: t, entry: e.of(t)}
		x.rank = r.Rank(x.entry)
		line = append(line, x)
	}
	p.line = line
	out.Tickets = best(line, max(free, 0)+extraPicks)
	return out
}

// best is the tickets of the k entries of line first in the draw's order, in it.
func best(line []ranked, k int) []uint64 {
	h := worstFirst{}
	for i := range line {
		x := &line[i]
		if len(h) < k {
			heap.Push(&h, x)
		} else if len(h) > 0 && before(x, h[0]) {
			h[0] = x
			heap.Fix(&h, 0)
		}
	}
	slices.SortFunc(h, func(a, b *ranked) int { return draw.Compare(a.entry, a.rank, b.entry, b.rank) })
	out := make([]uint64, len(h))
	for i, x := range h {
		out[i] = x.ticket
	}
	return out
}

func before(a, b *ranked) bool { return draw.Compare(a.entry, a.rank, b.entry, b.rank) < 0 }

// worstFirst is a heap of the best so far with the last of them on top.
type worstFirst []*ranked

func (h worstFirst) Len() int           { return len(h) }
func (h worstFirst) Less(i, j int) bool { return before(h[j], h[i]) }
func (h worstFirst) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *worstFirst) Push(x any)        { *h = append(*h, x.(*ranked)) }
func (h *worstFirst) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
