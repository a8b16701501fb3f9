package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"golang.org/x/sync/errgroup"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/waitingroom/redisstore"
)

// The liveness section is a store-level simulation of one room on one Redis master: n
// waiters spread over simInstances simulated instances, each running what a caddy's
// room and hub run against the store (a tick every 250 ms: the runtime settings, an
// admission step and the counters; every listed waiter's position every 500 ms; and
// keeping its waiters alive), with no sockets. It runs each size twice where the
// machine allows: with the hubs holding their waiters (queue.Holder: each round, one
// call for the sockets opened since the last, and one lease per instance) and, as the
// baseline, hearing of every waiter every heartbeat interval, as a hub that held none
// would. Each Redis is a fresh redis-server of the run; its commands, CPU and memory
// are read from the server itself.
func init() {
	register(section{
		name:  "liveness",
		about: "one room on one Redis with 10k/100k/1M waiters over 20 simulated instances: Redis commands, CPU and memory while idle and while the line moves",
		order: 15,
		run:   runLiveness,
	})
}

const simInstances = 20

// simJoinWait is the instances' join_wait: at 50 joins a second each, most joins would
// otherwise go alone.
const simJoinWait = 20 * time.Millisecond

type livenessScale struct {
	sizes        []int
	baselineUpTo int           // the heartbeat baseline runs up to this size (beyond, it saturates Redis)
	queueTTL     time.Duration // short, so the window sees every waiter's liveness checked
	window       time.Duration // each measured phase
	moving       int           // joins and admissions per second while the line moves
}

func livenessScaleFor(o options) livenessScale {
	sc := livenessScale{sizes: []int{10_000, 100_000, 1_000_000}, baselineUpTo: 100_000,
		queueTTL: 15 * time.Second, window: 30 * time.Second, moving: 1_000}
	if o.quick {
		sc = livenessScale{sizes: []int{2_000, 10_000}, baselineUpTo: 10_000,
			queueTTL: 3 * time.Second, window: 6 * time.Second, moving: 100}
	}
	if len(o.liveness) > 0 {
		sc.sizes = o.liveness
	}
	return sc
}

// simResult is what one simulated configuration cost Redis.
type simResult struct {
	idle, moving redisLoad
	bytesPer     float64 // used_memory per waiter
	// away is how many waiters had gone away by the end of each window, though every
	// one was kept alive: 0 for the held design (simulate fails otherwise); the
	// baseline's hearing can fall behind when Redis is busy.
	awayIdle, awayMoving int
}

type redisLoad struct {
	commands float64 // per second
	cpu      float64 // cores
}

func runLiveness(ctx context.Context, r *rig, o options) ([]row, error) {
	sc := livenessScaleFor(o)
	var rows []row
	for _, n := range sc.sizes {
		held, err := simulate(ctx, r, sc, n, true)
		if err != nil {
			return rows, err
		}
		var beat *simResult
		if n <= sc.baselineUpTo {
			b, err := simulate(ctx, r, sc, n, false)
			if err != nil {
				return rows, err
			}
			beat = &b
		}
		rows = append(rows, livenessRows(n, held, beat)...)
	}
	return rows, nil
}

// livenessRows are one size's rows: commands per waiter per second and Redis CPU, idle
// and moving, each beside the heartbeat baseline when it ran.
func livenessRows(n int, held simResult, beat *simResult) []row {
	size := queueLength(n)
	perWaiter := func(l redisLoad) float64 { return l.commands / float64(n) }
	mk := func(figure string, v, b float64, unit, target string, met bool) row {
		rw := row{section: "liveness", figure: figure, value: fmtFloat(v) + " " + unit, target: target}
		if beat != nil {
			rw.baseline = fmtFloat(b) + " " + unit
			if b > 0 {
				rw.ratio = fmt.Sprintf("%.3f", v/b)
			}
		}
		if target != "" {
			rw.verdict = verdict(met)
		}
		return rw
	}
	var b simResult
	if beat != nil {
		b = *beat
	}
	// The idle and CPU targets are for a million waiters; below, an instance's own steps and
	// rounds (a fixed cost, whatever its waiters) are most of what Redis runs. Memory
	// per waiter is read where the waiters, not the connections, are most of it.
	idleTarget, cpuTarget, memTarget := "", "", ""
	if n >= 1_000_000 {
		idleTarget, cpuTarget = "≤ 0.01", "≤ 0.25 core"
	}
	if n >= 100_000 {
		memTarget = "≤ 200 B"
	}
	return []row{
		mk(fmt.Sprintf("%s waiters idle: Redis commands per waiter per second", size),
			perWaiter(held.idle), perWaiter(b.idle), "", idleTarget, perWaiter(held.idle) <= 0.01),
		mk(fmt.Sprintf("%s waiters idle: Redis commands per second", size), held.idle.commands, b.idle.commands, "/s", "", true),
		mk(fmt.Sprintf("%s waiters idle: Redis CPU", size), held.idle.cpu, b.idle.cpu, "cores", cpuTarget, held.idle.cpu <= 0.25),
		mk(fmt.Sprintf("%s waiters, line moving: Redis commands per second", size), held.moving.commands, b.moving.commands, "/s", "", true),
		mk(fmt.Sprintf("%s waiters, line moving: Redis CPU", size), held.moving.cpu, b.moving.cpu, "cores", cpuTarget, held.moving.cpu <= 0.25),
		mk(fmt.Sprintf("%s waiters: Redis memory per waiter", size), held.bytesPer, b.bytesPer, "B", memTarget, held.bytesPer <= 200),
		mk(fmt.Sprintf("%s waiters: away at the end of the idle window, though kept alive", size),
			float64(held.awayIdle), float64(b.awayIdle), "", "0", held.awayIdle == 0),
		mk(fmt.Sprintf("%s waiters: away at the end of the moving window, though kept alive", size),
			float64(held.awayMoving), float64(b.awayMoving), "", "0", held.awayMoving == 0),
	}
}

func fmtFloat(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 0.01:
		return fmt.Sprintf("%.4f", v)
	case v < 10:
		return fmt.Sprintf("%.3f", v)
	default:
		return num(v)
	}
}

// simInstance is one simulated caddy: its store (its own holder slot) and its waiters.
type simInstance struct {
	store   queue.Store
	mu      sync.Mutex
	ids     []queue.VisitorID
	tickets []uint64
	beatAt  int               // the next of ids the heartbeat baseline hears of
	opened  []queue.VisitorID // joined since the last round: held at the next
}

// simulate runs one configuration on a fresh redis-server: fill, keep alive for a
// queue_ttl, measure idle, then move the line and measure again. It checks that
// liveness held (nobody away) and that positions are exact.
func simulate(ctx context.Context, r *rig, sc livenessScale, n int, hold bool) (simResult, error) {
	mode := "held"
	if !hold {
		mode = "heard"
	}
	srv, err := r.startRedis(fmt.Sprintf("liveness-%d-%s", n, mode))
	if err != nil {
		return simResult{}, err
	}
	defer srv.stop()
	cctx, cancel := caddy.NewContext(caddy.Context{Context: ctx})
	defer cancel()
	// Joins wait for company while there is a line, as a fleet of this size is set up
	// to (join_wait; docs/performance.md says what it saves).
	mod := &redisstore.Redis{URL: "redis://" + srv.addr, Timeout: caddy.Duration(10 * time.Second),
		JoinWait: caddy.Duration(simJoinWait)}
	if err := mod.Provision(cctx); err != nil {
		return simResult{}, err
	}
	inst := make([]*simInstance, simInstances)
	for i := range inst {
		st, release, err := mod.OpenStore(cctx, "sale")
		if err != nil {
			return simResult{}, err
		}
		defer release()
		inst[i] = &simInstance{store: st}
	}
	lim := queue.Limits{Capacity: 1, SessionTTL: time.Hour, QueueTTL: sc.queueTTL, AwayTTL: 10 * time.Minute}
	before, err := srv.usedMemory(ctx)
	if err != nil {
		return simResult{}, err
	}
	if err := fillSim(ctx, inst, n, lim, hold); err != nil {
		return simResult{}, err
	}
	after, err := srv.usedMemory(ctx)
	if err != nil {
		return simResult{}, err
	}
	res := simResult{bytesPer: float64(after-before) / float64(n)}

	heartbeatEvery := min(sc.queueTTL/3, 10*time.Second) // as the room sets its hub's
	run := func(d time.Duration, lim queue.Limits, joinsPerSecond int) (redisLoad, error) {
		_, cmds0, err := srv.commands(ctx)
		if err != nil {
			return redisLoad{}, err
		}
		cpu0, err := srv.cpuTime()
		if err != nil {
			return redisLoad{}, err
		}
		start := time.Now()
		if err := runInstances(ctx, inst, d, lim, hold, heartbeatEvery, joinsPerSecond); err != nil {
			return redisLoad{}, err
		}
		elapsed := time.Since(start).Seconds()
		_, cmds1, err := srv.commands(ctx)
		if err != nil {
			return redisLoad{}, err
		}
		cpu1, err := srv.cpuTime()
		if err != nil {
			return redisLoad{}, err
		}
		return redisLoad{commands: float64(cmds1-cmds0) / elapsed, cpu: (cpu1 - cpu0).Seconds() / elapsed}, nil
	}
	// One queue_ttl first, so that every waiter's liveness has been checked once by the
	// time the window opens (the sweep finds the joins' heard times due).
	if _, err := run(sc.queueTTL+2*time.Second, lim, 0); err != nil {
		return res, err
	}
	if res.idle, err = run(sc.window, lim, 0); err != nil {
		return res, err
	}
	st, err := inst[0].store.Stats(ctx)
	if err != nil {
		return res, err
	}
	res.awayIdle = st.Away
	if err := checkSim(ctx, inst, n); err != nil && hold {
		return res, fmt.Errorf("%s, %d waiters, idle: %w", mode, n, err)
	}
	moving := lim
	moving.Capacity, moving.Rate, moving.RatePer = 1<<30, sc.moving, time.Second
	if res.moving, err = run(sc.window, moving, sc.moving); err != nil {
		return res, err
	}
	if st, err = inst[0].store.Stats(ctx); err != nil {
		return res, err
	}
	res.awayMoving = st.Away
	if hold && st.Away != 0 || st.AdmittedTotal < uint64(sc.moving)*uint64(sc.window/time.Second)/2 {
		return res, fmt.Errorf("%s, %d waiters, moving: %+v: someone went away, or the line barely moved", mode, n, st)
	}
	return res, nil
}

// fillSim queues n waiters (after one admitted visitor who holds the only slot), spread
// over the instances, which then hold them (or, for the baseline, just know them).
func fillSim(ctx context.Context, inst []*simInstance, n int, lim queue.Limits, hold bool) error {
	now := time.Now()
	if _, err := inst[0].store.Join(ctx, queue.NewVisitorID(), now, lim); err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	for i, in := range inst {
		share := n / len(inst)
		if i < n%len(inst) {
			share++
		}
		g.Go(func() error {
			// Many joins in flight per instance, as a surge sends them: the store
			// batches them into few scripts.
			var mu sync.Mutex
			jg, jctx := errgroup.WithContext(gctx)
			jg.SetLimit(64)
			for range share {
				jg.Go(func() error {
					id := queue.NewVisitorID()
					st, err := in.store.Join(jctx, id, now, lim)
					if err != nil {
						return err
					}
					if st.State != queue.Queued {
						return fmt.Errorf("a join behind a full room was %v", st.State)
					}
					mu.Lock()
					in.ids, in.tickets = append(in.ids, id), append(in.tickets, st.Ticket)
					mu.Unlock()
					return nil
				})
			}
			if err := jg.Wait(); err != nil {
				return err
			}
			if h, ok := in.store.(queue.Holder); ok && hold {
				return h.Hold(gctx, in.ids, time.Now())
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	// A hub renews its lease all along; here the fill took a while, so every instance
	// renews before any of them steps (an instance that held its waiters early would
	// otherwise find its lease as old as the fill when another's step first sweeps).
	for _, in := range inst {
		if h, ok := in.store.(queue.Holder); ok && hold {
			if err := h.Hold(ctx, nil, time.Now()); err != nil {
				return err
			}
		}
	}
	return nil
}

// runInstances runs every instance's loops for d: ticks every 250 ms, positions every
// 500 ms, liveness (a lease renewal, or hearing of a share of its waiters) every round,
// and joinsPerSecond new waiters spread over the instances (arrivals).
func runInstances(ctx context.Context, inst []*simInstance, d time.Duration, lim queue.Limits,
	hold bool, heartbeatEvery time.Duration, joinsPerSecond int) error {
	// The window ends the loops, not the store calls in flight: a call sent just before
	// its end would carry the window's end as its deadline, and the store refuses a
	// call it cannot finish in time.
	window, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	const step, round = 250 * time.Millisecond, 500 * time.Millisecond
	for i, in := range inst {
		g.Go(func() error {
			// Instances do not tick in step with one another.
			select {
			case <-window.Done():
				return nil
			case <-time.After(time.Duration(i) * step / time.Duration(len(inst))):
			}
			tick := time.NewTicker(step)
			defer tick.Stop()
			var out []int
			var renewed time.Time // renewed at once: a hub renews its lease all along, also before this window
			for k := 0; ; k++ {
				select {
				case <-window.Done():
					return nil
				case <-gctx.Done():
					return nil // another instance failed; g.Wait reports it
				case <-tick.C:
				}
				now := time.Now()
				if err := in.keepAlive(gctx, now, hold, heartbeatEvery, round, &renewed, k%int(round/step) == 0); err != nil {
					return ignoreDone(gctx, err)
				}
				if err := in.tick(gctx, now, lim); err != nil {
					return ignoreDone(gctx, err)
				}
				if k%int(round/step) != 0 {
					continue
				}
				in.mu.Lock()
				tickets := slices.Clone(in.tickets)
				in.mu.Unlock()
				out = slices.Grow(out[:0], len(tickets))[:len(tickets)]
				if err := in.store.Positions(gctx, tickets, out); err != nil {
					return ignoreDone(gctx, err)
				}
				in.forget(tickets, out)
			}
		})
		if joinsPerSecond > 0 {
			g.Go(func() error { return in.arrivals(window, gctx, lim, hold, joinsPerSecond/len(inst)) })
		}
	}
	return g.Wait()
}

// tick is what a room's tick asks of the store: its runtime settings, an admission
// step, and the counters its pages and metrics show.
func (in *simInstance) tick(ctx context.Context, now time.Time, lim queue.Limits) error {
	if _, err := in.store.Overrides(ctx); err != nil {
		return err
	}
	if _, err := in.store.Step(ctx, now, lim); err != nil {
		return err
	}
	_, err := in.store.Stats(ctx)
	return err
}

// arrivals joins perSecond new waiters a second on this instance until the window
// ends, evenly spaced, each from a goroutine of its own as requests arrive: a join
// does not wait for the one before it.
func (in *simInstance) arrivals(window, ctx context.Context, lim queue.Limits, hold bool, perSecond int) error {
	every := time.Second / time.Duration(perSecond)
	tick := time.NewTicker(every)
	defer tick.Stop()
	var g errgroup.Group
	for {
		select {
		case <-window.Done():
			return g.Wait()
		case <-ctx.Done():
			return g.Wait()
		case now := <-tick.C:
			g.Go(func() error { return ignoreDone(ctx, in.join(ctx, now, lim, hold)) })
		}
	}
}

func ignoreDone(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// join queues one new waiter on this instance. Its socket opens at once, and the
// instance holds it at its next round (keepAlive), as a hub tells the store of the
// sockets that opened since its last round in one call.
func (in *simInstance) join(ctx context.Context, now time.Time, lim queue.Limits, hold bool) error {
	id := queue.NewVisitorID()
	st, err := in.store.Join(ctx, id, now, lim)
	if err != nil || st.State != queue.Queued {
		return err
	}
	in.mu.Lock()
	in.ids, in.tickets = append(in.ids, id), append(in.tickets, st.Ticket)
	if hold {
		in.opened = append(in.opened, id)
	}
	in.mu.Unlock()
	return nil
}

// forget drops the waiters Positions says are no longer queued (admitted).
func (in *simInstance) forget(tickets []uint64, positions []int) {
	gone := map[uint64]bool{}
	for i, p := range positions {
		if p == 0 {
			gone[tickets[i]] = true
		}
	}
	if len(gone) == 0 {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	k := 0
	for i, t := range in.tickets {
		if !gone[t] {
			in.ids[k], in.tickets[k] = in.ids[i], t
			k++
		}
	}
	in.ids, in.tickets = in.ids[:k], in.tickets[:k]
	in.beatAt = 0
}

// keepAlive is one round's liveness, as a hub's round does it. A Holder instance holds
// the waiters whose sockets opened since its last round, and renews its lease with
// them, or alone once per heartbeat interval; the baseline hears of its waiters, a
// round's share of them each round (as hubs spread their heartbeats), so each is heard
// every interval.
func (in *simInstance) keepAlive(ctx context.Context, now time.Time, hold bool, every, round time.Duration, renewed *time.Time, roundStarts bool) error {
	if !roundStarts {
		return nil
	}
	if h, ok := in.store.(queue.Holder); ok && hold {
		in.mu.Lock()
		opened := in.opened
		in.opened = nil
		in.mu.Unlock()
		if len(opened) == 0 && now.Sub(*renewed) < every {
			return nil
		}
		*renewed = now
		return h.Hold(ctx, opened, now)
	}
	in.mu.Lock()
	share := len(in.ids)*int(round)/int(every) + 1
	var beat []queue.VisitorID
	for range min(share, len(in.ids)) {
		if in.beatAt >= len(in.ids) {
			in.beatAt = 0
		}
		beat = append(beat, in.ids[in.beatAt])
		in.beatAt++
	}
	in.mu.Unlock()
	return in.store.Heartbeat(ctx, beat, now)
}

// checkSim checks the room after the idle window: every waiter present, and the first
// instance's positions exact (a waiter's rank among all queued tickets).
func checkSim(ctx context.Context, inst []*simInstance, n int) error {
	st, err := inst[0].store.Stats(ctx)
	if err != nil {
		return err
	}
	if st.Waiting != n || st.Away != 0 {
		return fmt.Errorf("%d waiting and %d away, want all %d present", st.Waiting, st.Away, n)
	}
	var all []uint64
	for _, in := range inst {
		all = append(all, in.tickets...)
	}
	slices.Sort(all)
	out := make([]int, len(inst[0].tickets))
	if err := inst[0].store.Positions(ctx, inst[0].tickets, out); err != nil {
		return err
	}
	for i, t := range inst[0].tickets {
		want, _ := slices.BinarySearch(all, t)
		if out[i] != want+1 {
			return fmt.Errorf("ticket %d at position %d, brute force says %d", t, out[i], want+1)
		}
	}
	return nil
}
