package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"
)

// The ws section holds -waiters waiting WebSockets (100,000) on -instances Caddy
// processes (6) sharing one Redis, from -clients client processes (6), and measures
// what the README promises about them: every waiter hears from the room at least
// every 2 s while nobody moves, the server's memory per waiter, Redis's memory per
// waiter, and Redis commands for the position pushes that do not grow with the
// waiters. It grows the crowd in three steps (1 %, 10 %, 100 %) and measures Redis over
// an idle window at each; at full load it holds a measured window, then times
// admissions across instances under that load (probe.go).
func init() {
	register(section{
		name:  "ws",
		about: "100k waiting WebSockets on several instances sharing one Redis: pushes, memory and Redis cost per waiter, admission under load",
		order: 70,
		run:   runWS,
	})
}

// The push promise: a position at least every maxSilence, measured at the client as
// the longest silence between two messages (or since the last one, at the end of the
// window). The tolerance covers what lies between the server's clock and the
// client's: the write, the loopback, and the client process being scheduled on a
// machine where 13 processes share 2 cores.
const (
	promisedSilence  = 2 * time.Second
	silenceTolerance = 250 * time.Millisecond
	silenceBound     = promisedSilence + silenceTolerance
)

// wsPlan is the scale of a run.
type wsPlan struct {
	populations []int         // waiters held at each Redis window; the last is the full load
	settle      time.Duration // after growing, before measuring: the joins' own work is over
	window      time.Duration // Redis's idle window at the smaller populations
	hold        time.Duration // the measured window at full load
	probes      int           // admission samples under full load
}

func planWS(o options) wsPlan {
	n := o.waiters
	p := wsPlan{
		populations: []int{max(n/100, o.instances), max(n/10, o.instances), n},
		// A window of 10 s or more holds one heartbeat round of every instance (each
		// hears its waiters every 10 s), so the all-commands figure is not luck of phase.
		settle: 3 * time.Second, window: 10 * time.Second, hold: 20 * time.Second,
		probes: 30,
	}
	if o.quick {
		p.settle, p.window, p.hold, p.probes = time.Second, 3*time.Second, 5*time.Second, 10
	}
	return p
}

func runWS(ctx context.Context, r *rig, o options) ([]row, error) {
	plan := planWS(o)
	red, err := r.startRedis("ws-redis")
	if err != nil {
		return nil, err
	}
	defer red.stop()
	var ins []*instance
	for i := range o.instances {
		in, err := r.startCaddy(fmt.Sprintf("ws-caddy%d", i), caddyConfig{"site": roomSite("load_ws", red.addr)})
		if err != nil {
			return nil, err
		}
		defer in.stop()
		ins = append(ins, in)
	}
	addrs := instanceAddrs(ins, "site")

	// Before anyone joins: what the per-waiter figures subtract.
	var before fleetState
	if err := before.read(ctx, ins, red); err != nil {
		return nil, err
	}
	holder, err := takeSlot(addrs[0])
	if err != nil {
		return nil, err
	}
	probes, err := joinProbes(addrs, plan.probes)
	if err != nil {
		return nil, err
	}
	defer closeProbes(probes)
	var clients []*steeredClient
	for k := range o.clients {
		c, err := r.startSteeredClient(fmt.Sprintf("ws-waiters%d", k), "waiters",
			"-addrs", strings.Join(addrs, ","), "-path", roomPath,
			"-source", fmt.Sprintf("127.0.0.%d", 2+k), "-bound", silenceBound.String())
		if err != nil {
			return nil, err
		}
		defer c.stop()
		clients = append(clients, c)
	}

	groups := map[string][]*proc{"Redis": {red.proc}}
	for _, in := range ins {
		groups["Caddy"] = append(groups["Caddy"], in.proc)
	}
	for _, c := range clients {
		groups["clients"] = append(groups["clients"], c.proc)
	}
	var windows []redisWindow
	var g growth
	for i, pop := range plan.populations {
		ramp, err := startCPUMeter(groups)
		if err != nil {
			return nil, err
		}
		answers, err := askAll[growAnswer](clients, func(k int) string {
			return fmt.Sprintf("grow %d", share(pop, len(clients), k))
		})
		if err != nil {
			return nil, err
		}
		g.add(answers)
		cores, err := ramp.cores()
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "   %d of %d waiters connected (%d failed%s); cores used: %s\n",
			g.connected, pop, g.failed, g.firstError, formatCores(cores))
		if err := sleep(ctx, plan.settle); err != nil {
			return nil, err
		}
		d := plan.window
		if i == len(plan.populations)-1 {
			d = plan.hold
			if _, err := askAll[struct{}](clients, func(int) string { return "mark" }); err != nil {
				return nil, err
			}
			if o.profiles != "" {
				go func() { _ = r.profile(ins[0], "profile", d/2, "ws-caddy0-cpu.pprof") }()
			}
		}
		meter, err := startCPUMeter(groups)
		if err != nil {
			return nil, err
		}
		w, err := measureRedis(ctx, red, d)
		if err != nil {
			return nil, err
		}
		w.waiters = g.connected
		if w.cores, err = meter.cores(); err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "   cores used over %v: %s\n", d, formatCores(w.cores))
		windows = append(windows, w)
	}
	reports, err := askAll[waitersReport](clients, func(int) string { return "report" })
	if err != nil {
		return nil, err
	}
	var after fleetState
	if err := after.read(ctx, ins, red); err != nil {
		return nil, err
	}
	if err := r.profile(ins[0], "heap", 0, "ws-caddy0-heap.pprof"); err != nil {
		return nil, err
	}
	_ = r.profile(ins[0], "goroutine", 0, "ws-caddy0-goroutine.pprof")

	rows := wsRows(o, plan, g, reports, before, after, g.connected+len(probes), windows)
	fmt.Fprintf(os.Stderr, "   timing %d admissions under that load…\n", len(probes))
	s, err := timeAdmissions(ctx, addrs, holder, probes)
	rows = append(rows, latencyRows(fmt.Sprintf("%s waiters held", num(float64(g.connected))), s)...)
	return rows, err
}

// share is client k's part of n waiters.
func share(n, clients, k int) int {
	s := n / clients
	if k < n%clients {
		s++
	}
	return s
}

// growth sums the clients' answers to grow.
type growth struct {
	connected, failed int
	firstError        string
	took              time.Duration // time spent growing, the slowest client's each step
}

func (g *growth) add(answers []growAnswer) {
	g.connected, g.failed = 0, 0
	var slowest float64
	for _, a := range answers {
		g.connected += a.Connected
		g.failed += a.Failed
		if a.FirstError != "" && g.firstError == "" {
			g.firstError = ": " + a.FirstError
		}
		slowest = max(slowest, a.Seconds)
	}
	g.took += time.Duration(slowest * float64(time.Second))
}

// fleetState is what the memory figures compare, before and with the waiters.
type fleetState struct {
	rss      int64
	goMem    goMemory
	redisMem int64
}

func (s *fleetState) read(ctx context.Context, ins []*instance, red *redisServer) error {
	var err error
	if s.rss, err = fleetRSS(ins); err != nil { // first: the collection below would shrink the heap
		return err
	}
	if s.goMem, err = fleetGoMemory(ctx, ins, true); err != nil {
		return err
	}
	s.redisMem, err = red.usedMemory(ctx)
	return err
}

// A redisWindow is what Redis ran per second over an idle window.
type redisWindow struct {
	waiters  int
	rounds   float64 // positions rounds: BITPOS runs in that script only, once a round
	scripts  float64 // EVALSHA and EVAL: the store's round trips
	commands float64 // every command, those inside scripts included

	cores map[string]float64 // what each group of processes used meanwhile
}

func formatCores(cores map[string]float64) string {
	return fmt.Sprintf("Caddy %.2f, clients %.2f, Redis %.2f", cores["Caddy"], cores["clients"], cores["Redis"])
}

func measureRedis(ctx context.Context, red *redisServer, d time.Duration) (redisWindow, error) {
	c0, err := redisCalls(ctx, red)
	if err != nil {
		return redisWindow{}, err
	}
	start := time.Now()
	if err := sleep(ctx, d); err != nil {
		return redisWindow{}, err
	}
	c1, err := redisCalls(ctx, red)
	if err != nil {
		return redisWindow{}, err
	}
	secs := time.Since(start).Seconds()
	var w redisWindow
	for name, n := range c1 {
		if name == "info" {
			continue // ours
		}
		rate := float64(n-c0[name]) / secs
		w.commands += rate
		switch name {
		case "evalsha", "eval":
			w.scripts += rate
		case "bitpos":
			w.rounds += rate
		}
	}
	return w, nil
}

func wsRows(o options, plan wsPlan, g growth, reports []waitersReport, before, after fleetState, held int, windows []redisWindow) []row {
	requested := plan.populations[len(plan.populations)-1]
	var within, ended, admitted int
	var gaps []int
	var window float64
	for _, rep := range reports {
		within += rep.Within
		ended += rep.EndedN
		admitted += rep.Admitted
		gaps = append(gaps, rep.MaxGapMillis...)
		window = max(window, rep.WindowSeconds)
	}
	sec := func(ms int) string { return fmt.Sprintf("%.2f s", float64(ms)/1000) }
	p99 := percentile(gaps, 0.99)
	kib := func(b float64) string { return fmt.Sprintf("%.1f KiB", b/1024) }
	perWaiter := func(b float64) float64 { return b / float64(max(held, 1)) }
	goBefore, goAfter := before.goMem, after.goMem
	goPer := perWaiter(goAfter.heap + goAfter.stacks - goBefore.heap - goBefore.stacks)
	rssPer := perWaiter(float64(after.rss - before.rss))
	redisPer := perWaiter(float64(after.redisMem - before.redisMem))

	rows := []row{
		{figure: fmt.Sprintf("waiting WebSockets held (%d instances, %d client processes, one Redis)", o.instances, o.clients),
			value: fmt.Sprintf("%d of %d", g.connected, requested), target: "all", verdict: verdict(g.connected == requested)},
		{figure: "  ramp: join + upgrade per waiter, all clients together",
			value: num(float64(g.connected)/g.took.Seconds()) + " /s"},
		ratioRow(fmt.Sprintf("waiters told at least every %v over a %.0f s hold (longest silence ≤ %v)", promisedSilence, window, silenceBound),
			float64(within), float64(g.connected), "waiters", 1),
		{figure: "  longest silence per waiter: p50 / p99 / max",
			value:  sec(percentile(gaps, 0.5)) + " / " + sec(p99) + " / " + sec(percentile(gaps, 1)),
			target: "p99 ≤ " + silenceBound.String(), verdict: verdict(len(gaps) > 0 && time.Duration(p99)*time.Millisecond <= silenceBound)},
		{figure: "  sockets ended, or told admitted, during the hold", value: fmt.Sprint(ended + admitted),
			target: "0", verdict: verdict(ended+admitted == 0)},
		{figure: fmt.Sprintf("  cores used during the hold (of %d, on a shared machine)", runtime.NumCPU()),
			value: formatCores(windows[len(windows)-1].cores)},
		{figure: "server memory per waiter (RSS of all instances, with waiters − before)",
			value: kib(rssPer), baseline: fmt.Sprintf("%.0f MiB before", float64(before.rss)/(1<<20)),
			target: "≤ 20 KiB", verdict: verdict(held > 0 && rssPer <= 20*1024)},
		{figure: "  of which Go heap + goroutine stacks in use (after a collection)",
			value: fmt.Sprintf("%s (heap %s, stacks %s)", kib(goPer),
				kib(perWaiter(goAfter.heap-goBefore.heap)), kib(perWaiter(goAfter.stacks-goBefore.stacks)))},
		{figure: "  goroutines per waiter", value: fmt.Sprintf("%.2f", perWaiter(goAfter.goroutines-goBefore.goroutines))},
		{figure: "Redis used_memory per waiter", value: fmt.Sprintf("%.0f B", redisPer), target: "≤ 200 B", verdict: verdict(held > 0 && redisPer <= 200)},
	}
	base := windows[0]
	for _, w := range windows {
		ratio := w.rounds / base.rounds
		rows = append(rows, row{
			figure:   fmt.Sprintf("position pushes at %s waiters: Redis script runs/s (1 run, 4 commands, per instance per round)", num(float64(w.waiters))),
			value:    fmt.Sprintf("%.1f /s", w.rounds),
			baseline: fmt.Sprintf("%.1f /s at %s", base.rounds, num(float64(base.waiters))),
			ratio:    fmt.Sprintf("%.2f", ratio),
			target:   "≈ 1", verdict: verdict(ratio >= 0.8 && ratio <= 1.25),
		})
	}
	for _, w := range windows {
		rows = append(rows, row{
			figure:   fmt.Sprintf("  everything Redis ran while idle at %s waiters (heartbeats grow with waiters)", num(float64(w.waiters))),
			value:    fmt.Sprintf("%s commands/s in %s script runs/s", num(w.commands), num(w.scripts)),
			baseline: fmt.Sprintf("%s commands/s", num(base.commands)),
			ratio:    fmt.Sprintf("%.2f", w.commands/base.commands),
		})
	}
	return rows
}

// askAll sends each client its command at once and collects the answers in order.
func askAll[T any](clients []*steeredClient, command func(k int) string) ([]T, error) {
	answers := make([]T, len(clients))
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for k, c := range clients {
		wg.Go(func() { errs[k] = c.ask(command(k), &answers[k]) })
	}
	wg.Wait()
	return answers, errors.Join(errs...)
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
