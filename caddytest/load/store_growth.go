package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// growthLimit is the most a cost may grow from the smallest queue to the largest (a
// hundred times longer). A scan of the queue anywhere would make it near 100; flat is
// 1; the memory store's tree is O(log n), 1.7 times the steps at 100k as at 1k, and
// more once it outgrows the CPU's caches; the rest is the machines' noise.
const growthLimit = 3.0

// A waiter is one queued visitor of a growth room, in ticket order.
type waiter struct {
	id     queue.VisitorID
	ticket uint64
}

// growthRoom is a room held at a queue length while its costs are measured: every
// join measured is followed by a departure from the head, so the queue stays between
// size and size plus one chunk, and tickets move on as in a real sale.
type growthRoom struct {
	size    int
	store   queue.Store
	release func()
	queue   []waiter // the live waiters, head first
	out     []int
}

// costGrowth measures, at every queue length of sc.sizes, the cost of one join (one
// joiner at a time: its latency) and the cost per waiter of the hub's positions call
// (one Store.Positions for every waiter of the room). Rounds interleave stores and
// lengths after a warm-up round; medians are reported, each against the smallest
// length's.
func costGrowth(ctx context.Context, r *rig, sc storeScale, kinds ...*storeKind) ([]row, error) {
	type series struct{ join, position map[int][]float64 }
	all := map[*storeKind]series{}
	rooms := map[*storeKind][]*growthRoom{}
	defer func() {
		for _, rs := range rooms {
			for _, g := range rs {
				g.release()
			}
		}
	}()
	for _, k := range kinds {
		all[k] = series{join: map[int][]float64{}, position: map[int][]float64{}}
		for _, size := range sc.sizes {
			g, err := newGrowthRoom(ctx, k, size)
			if err != nil {
				return nil, err
			}
			rooms[k] = append(rooms[k], g)
		}
	}
	// Round 0 warms up (caches, the allocator's spans, Redis's connections) and is not
	// counted: otherwise the first length measured would pay for it.
	for round := range 1 + r.o.rounds {
		for _, k := range kinds {
			// One chunk size for every length, so only the length differs: a tenth of the
			// smallest queue, which then never grows by more than a tenth while measured.
			least, chunk := sc.memoryTime, max(1, min(sc.sizes[0]/10, 1000))
			if k.redis != nil {
				least, chunk = sc.redisTime, max(1, min(sc.sizes[0]/10, 100))
			}
			for _, g := range rooms[k] {
				p, err := g.positionCost(ctx, least)
				if err != nil {
					return nil, fmt.Errorf("%s, %d queued: %w", k.name, g.size, err)
				}
				j, err := g.joinCost(ctx, least, chunk)
				if err != nil {
					return nil, fmt.Errorf("%s, %d queued: %w", k.name, g.size, err)
				}
				if round == 0 {
					continue
				}
				all[k].position[g.size] = append(all[k].position[g.size], p)
				all[k].join[g.size] = append(all[k].join[g.size], j)
			}
		}
	}
	var rows []row
	for _, k := range kinds {
		rows = append(rows, growthRows(k.name, sc.sizes, "join cost, one joiner", "µs", all[k].join)...)
		rows = append(rows, growthRows(k.name, sc.sizes, "positions call (all waiters), cost per waiter", "ns", all[k].position)...)
	}
	return rows, nil
}

// growthRows are one figure's rows: its cost at each length, each against the
// smallest length's in the same rounds; only the largest has a target.
func growthRows(store string, sizes []int, what, unit string, costs map[int][]float64) []row {
	var rows []row
	first := costs[sizes[0]]
	for i, size := range sizes {
		figure := fmt.Sprintf("%s: %s, %s queued", store, what, queueLength(size))
		if i == 0 {
			rows = append(rows, row{figure: figure, value: num(median(first)) + " " + unit})
			continue
		}
		limit := 0.0
		if i == len(sizes)-1 {
			limit = growthLimit
		}
		rows = append(rows, growthRow(figure+" (vs "+queueLength(sizes[0])+")", costs[size], first, unit, limit))
	}
	return rows
}

// newGrowthRoom opens a fresh room of k: one visitor takes the only slot, then size
// waiters join from many goroutines (the fast way to fill it, through the store's
// own Join).
func newGrowthRoom(ctx context.Context, k *storeKind, size int) (*growthRoom, error) {
	store, release, err := k.open()
	if err != nil {
		return nil, err
	}
	g := &growthRoom{size: size, store: store, release: release, out: make([]int, 0, size)}
	if _, err := store.Join(ctx, queue.NewVisitorID(), time.Now(), storeLimits); err != nil {
		release()
		return nil, err
	}
	var mu sync.Mutex
	_, err = loopRate(ctx, size, joiners(), func(ctx context.Context, id queue.VisitorID, now time.Time) error {
		st, err := store.Join(ctx, id, now, storeLimits)
		if err != nil {
			return err
		}
		if st.State != queue.Queued {
			return fmt.Errorf("a join into a full room was %s", st.State)
		}
		mu.Lock()
		g.queue = append(g.queue, waiter{id, st.Ticket})
		mu.Unlock()
		return nil
	})
	if err != nil {
		release()
		return nil, err
	}
	slices.SortFunc(g.queue, func(a, b waiter) int { return cmp.Compare(a.ticket, b.ticket) })
	return g, nil
}

// positionCost calls Positions for every waiter of the room, as often as fits in
// least, and returns the time per waiter in nanoseconds. The first call's answers
// must be exact: the waiter at index i stands at position i+1.
func (g *growthRoom) positionCost(ctx context.Context, least time.Duration) (float64, error) {
	tickets := make([]uint64, len(g.queue))
	for i, w := range g.queue {
		tickets[i] = w.ticket
	}
	out := g.out[:len(tickets)]
	calls := 0
	start := time.Now()
	for elapsed := time.Duration(0); elapsed < least; elapsed = time.Since(start) {
		if err := g.store.Positions(ctx, tickets, out); err != nil {
			return 0, err
		}
		if calls == 0 {
			for i, p := range out {
				if p != i+1 {
					return 0, fmt.Errorf("waiter %d of %d stands at position %d", i+1, len(out), p)
				}
			}
			start = time.Now() // the check is not the store's cost
		}
		calls++
	}
	return float64(time.Since(start).Nanoseconds()) / float64((calls-1)*len(tickets)), nil
}

// joinCost joins new visitors one at a time, chunk after chunk, until least has been
// spent joining, and returns the time per join in microseconds. After each chunk as
// many waiters leave from the head (not timed), and a step (with nobody admitted)
// tidies up as the room's ticker would. Every join must be queued at the back.
func (g *growthRoom) joinCost(ctx context.Context, least time.Duration, chunk int) (float64, error) {
	var spent time.Duration
	joins := 0
	hold := storeLimits
	hold.Hold = true
	for spent < least {
		start := time.Now()
		for range chunk {
			id := queue.NewVisitorID()
			st, err := g.store.Join(ctx, id, time.Now(), storeLimits)
			if err != nil {
				return 0, err
			}
			if st.State != queue.Queued || st.Position != len(g.queue)+1 {
				return 0, fmt.Errorf("a join behind %d waiters was %s at position %d", len(g.queue), st.State, st.Position)
			}
			g.queue = append(g.queue, waiter{id, st.Ticket})
		}
		spent += time.Since(start)
		joins += chunk
		for _, w := range g.queue[:chunk] {
			if _, err := g.store.Leave(ctx, w.id); err != nil {
				return 0, err
			}
		}
		g.queue = g.queue[chunk:]
		if _, err := g.store.Step(ctx, time.Now(), hold); err != nil {
			return 0, err
		}
	}
	return float64(spent.Nanoseconds()) / float64(joins) / 1e3, nil
}

// queueLength writes a queue length the way the table reads it: 1k, 100k.
func queueLength(n int) string {
	if n >= 1000 && n%1000 == 0 {
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}
