package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The ws section holds -waiters waiting WebSockets (100,000) on -instances Caddy
// processes (6) sharing one Redis, from -clients client processes (6), and measures
// what the manual promises about them: every waiter hears from the room at least
// every 2 s while nobody moves, the server's memory per waiter, Redis's memory per
// waiter, and Redis commands for the position pushes that do not grow with the
// waiters. It grows the crowd in three steps (1 %, 10 %, 100 %) and measures an idle
// window at each, the last one longer; then it times admissions across instances
// under that load (probe.go), and last measures a window with the line moving, as in
// a sale (moving).
func init() {
	register(section{
		name:  "ws",
		about: "100k waiting WebSockets on several instances sharing one Redis: pushes, memory and Redis cost per waiter, admission under load",
		order: 70,
		run:   runWS,
	})
}

// The push promise: a position at least every maxSilence, measured at the waiter's
// socket as the longest silence between two messages (or since the last one, at the
// end of the window). A message counts from when it reached the socket, the kernel's
// time of receipt (SO_TIMESTAMPNS), which on one machine is when the server's write
// delivered it. The client process reads it later, by however long it waited for a
// core beside 12 other processes on 2: that is the harness's lateness, not the
// room's, and it is shown beside (heardRows) but not held against the promise, which
// gets no tolerance. Unless it grows past the time between two messages: what waits
// unread in a socket is dated by its latest arrival, so a silence before a message
// read together with a later one counts as longer than it was. The rows count such
// messages, and where there are many the silences are upper bounds.
const (
	promisedSilence = 2 * time.Second
	silenceBound    = promisedSilence
)

// wsRoom is the room every instance of the section serves.
const wsRoom = "load_ws"

// wsPlan is the scale of a run.
type wsPlan struct {
	populations []int         // waiters held at each idle window; the last is the full load
	settle      time.Duration // after growing, before measuring: the joins' own work is over
	window      time.Duration // the idle window at the smaller populations
	hold        time.Duration // the idle window at full load
	probes      int           // admission samples under full load
	// movePerRound is how many the moving window admits from the head each round.
	movePerRound int
}

func planWS(o options) wsPlan {
	n := o.waiters
	p := wsPlan{
		populations: []int{max(n/100, o.instances), max(n/10, o.instances), n},
		// A window of 10 s or more holds one heartbeat round of every instance (each
		// hears its waiters every 10 s), so the all-commands figure is not luck of phase.
		settle: 3 * time.Second, window: 10 * time.Second, hold: 20 * time.Second,
		probes: 30, movePerRound: 20,
	}
	if o.quick {
		p.settle, p.window, p.hold, p.probes = time.Second, 2*time.Second, 3*time.Second, 5
	}
	return p
}

// wsFleet is everything the section starts.
type wsFleet struct {
	r       *rig
	over    transport
	red     *redisServer
	ins     []*instance
	addrs   []string
	clients []*steeredClient
	groups  map[string][]*proc // for the CPU meter: Caddy, clients, Redis
}

// runWS runs the section over each transport in turn (one fleet at a time: the
// figures are per waiter and per core) and prints the rows side by side, then what
// TLS costs beside plain HTTP.
func runWS(ctx context.Context, r *rig, o options) ([]row, error) {
	var lists [][]row
	var costs []wsCost
	for _, t := range o.transports() {
		fmt.Fprintf(os.Stderr, "   over %s\n", t.scheme())
		var cost wsCost
		rows, err := runWSFleet(ctx, r, o, t, &cost)
		if t.secure {
			rows = labelRows(rows, t.label())
		}
		lists = append(lists, rows)
		costs = append(costs, cost)
		if err != nil {
			return pairRows(lists...), err
		}
	}
	rows := pairRows(lists...)
	if len(costs) == 2 {
		rows = append(rows, tlsCostRows(costs[0], costs[1])...)
	}
	return rows, nil
}

func runWSFleet(ctx context.Context, r *rig, o options, t transport, cost *wsCost) ([]row, error) {
	plan := planWS(o)
	f := &wsFleet{r: r, over: t}
	defer f.stop()
	if err := f.start(o); err != nil {
		return nil, err
	}
	// Before anyone joins: what the per-waiter figures subtract.
	var before fleetState
	if err := before.read(ctx, f); err != nil {
		return nil, err
	}
	holder, err := takeSlot(t, f.addrs[0])
	if err != nil {
		return nil, err
	}
	probes, err := joinProbes(t, f.addrs, plan.probes)
	if err != nil {
		return nil, err
	}
	defer closeProbes(probes)
	if err := f.startClients(o); err != nil {
		return nil, err
	}

	var windows []idleWindow
	var g growth
	for i, pop := range plan.populations {
		if err := f.grow(ctx, pop, &g); err != nil {
			return nil, err
		}
		if err := sleep(ctx, plan.settle); err != nil {
			return nil, err
		}
		d := plan.window
		profiled := func() error { return nil }
		if i == len(plan.populations)-1 {
			d = plan.hold
			profiled = r.profileBeside(f.ins[0], "profile", d/2, "ws-caddy0"+fileSuffix(t)+"-cpu.pprof")
		}
		w, err := f.idle(ctx, d)
		if err != nil {
			return nil, err
		}
		if err := profiled(); err != nil {
			return nil, err
		}
		w.waiters = g.connected
		windows = append(windows, w)
	}
	var after fleetState
	if err := after.read(ctx, f); err != nil {
		return nil, err
	}
	if err := r.profile(f.ins[0], "heap", 0, "ws-caddy0"+fileSuffix(t)+"-heap.pprof"); err != nil {
		return nil, err
	}
	if err := r.profile(f.ins[0], "goroutine", 0, "ws-caddy0"+fileSuffix(t)+"-goroutine.pprof"); err != nil {
		return nil, err
	}

	rows := wsRows(o, plan, g, windows, before, after, g.connected+len(probes))
	*cost = costOf(windows[len(windows)-1], before, after, g.connected+len(probes))
	fmt.Fprintf(os.Stderr, "   timing %d admissions under that load…\n", len(probes))
	s, err := timeAdmissions(ctx, t, f.addrs, holder, probes)
	rows = append(rows, latencyRows(fmt.Sprintf("%s waiters held", num(float64(g.connected))), s)...)
	if err != nil {
		return rows, err
	}
	// Last, as it admits from the head: the line moves, as it does in a sale.
	profiled := r.profileBeside(f.ins[0], "profile", plan.window/2, "ws-caddy0"+fileSuffix(t)+"-moving-cpu.pprof")
	w, err := f.moving(ctx, plan.window, plan.movePerRound)
	if err != nil {
		return rows, err
	}
	if err := profiled(); err != nil {
		return rows, err
	}
	w.waiters = g.connected
	return append(rows, heardRows(w)...), nil
}

// moving is an idle window but for the line: every push round, the admin API admits
// movePerRound waiters from the head, so every waiter's position changes every round
// and each is owed a message every round, not every resend; 100k waiters then ask
// for four times the messages of an idle line. Those admitted are told so and leave;
// the rows count the rest.
func (f *wsFleet) moving(ctx context.Context, d time.Duration, movePerRound int) (idleWindow, error) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var admitErr error
	client := &http.Client{Timeout: handshakeTimeout}
	defer client.CloseIdleConnections()
	wg.Go(func() {
		t := time.NewTicker(pushRound)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			if err := admitFromHead(ctx, client, f.ins[0], movePerRound); err != nil {
				admitErr = err
				return
			}
		}
	})
	w, err := f.idle(ctx, d)
	close(stop)
	wg.Wait()
	w.moving = movePerRound
	return w, errors.Join(err, admitErr)
}

func (f *wsFleet) start(o options) error {
	var err error
	if f.red, err = f.r.startRedis("ws-redis" + fileSuffix(f.over)); err != nil {
		return err
	}
	f.groups = map[string][]*proc{"Redis": {f.red.proc}}
	for i := range o.instances {
		in, err := f.r.startCaddyOver(fmt.Sprintf("ws-caddy%d%s", i, fileSuffix(f.over)), caddyConfig{"site": roomSite(wsRoom, f.red.addr)}, f.over)
		if err != nil {
			return err
		}
		f.ins = append(f.ins, in)
		f.groups["Caddy"] = append(f.groups["Caddy"], in.proc)
	}
	f.addrs = instanceAddrs(f.ins, "site")
	return nil
}

// startClients starts the client processes, each sending from a loopback address of
// its own (see waiters.go).
func (f *wsFleet) startClients(o options) error {
	for k := range o.clients {
		args := []string{"-addrs", strings.Join(f.addrs, ","), "-path", roomPath,
			"-source", fmt.Sprintf("127.0.0.%d", 2+k), "-bound", silenceBound.String()}
		if f.over.secure {
			args = append(args, "-ca", f.r.rootFile())
		}
		if k == 0 && o.profiles != "" {
			if err := os.MkdirAll(o.profiles, 0o755); err != nil {
				return err
			}
			args = append(args, "-cpuprofile", filepath.Join(o.profiles, "ws-client0"+fileSuffix(f.over)+"-cpu.pprof"))
		}
		c, err := f.r.startSteeredClient(fmt.Sprintf("ws-waiters%d%s", k, fileSuffix(f.over)), "waiters", args...)
		if err != nil {
			return err
		}
		f.clients = append(f.clients, c)
		f.groups["clients"] = append(f.groups["clients"], c.proc)
	}
	return nil
}

// stop ends the section's processes now rather than at the end of the run: the next
// section should not share the machine with 100,000 idle sockets.
func (f *wsFleet) stop() {
	for _, c := range f.clients {
		c.stop()
	}
	for _, in := range f.ins {
		in.stop()
	}
	if f.red != nil {
		f.red.stop()
	}
}

// grow has the clients connect waiters until pop are held, and says how it went.
func (f *wsFleet) grow(ctx context.Context, pop int, g *growth) error {
	meter, err := startCPUMeter(f.groups)
	if err != nil {
		return err
	}
	answers, err := askAll[growAnswer](f.clients, func(k int) string {
		return fmt.Sprintf("grow %d", share(pop, len(f.clients), k))
	})
	if err != nil {
		return err
	}
	g.add(answers)
	cores, err := meter.cores()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "   %d of %d waiters connected (%d upgrades retried, %d failed%s); cores used: %s\n",
		g.connected, pop, g.retried, g.failed, g.firstError, formatCores(cores))
	return nil
}

// An idleWindow is what one window measured while nobody joined or was admitted (or,
// with moving > 0, while that many were admitted from the head every push round).
type idleWindow struct {
	waiters int
	moving  int
	redis   redisRates
	cores   map[string]float64 // what each group of processes used
	heard   []waitersReport    // each client's
}

func (f *wsFleet) idle(ctx context.Context, d time.Duration) (idleWindow, error) {
	var w idleWindow
	if _, err := askAll[struct{}](f.clients, func(int) string { return "mark" }); err != nil {
		return w, err
	}
	meter, err := startCPUMeter(f.groups)
	if err != nil {
		return w, err
	}
	if w.redis, err = measureRedis(ctx, f.red, d); err != nil {
		return w, err
	}
	if w.cores, err = meter.cores(); err != nil {
		return w, err
	}
	if w.heard, err = askAll[waitersReport](f.clients, func(int) string { return "report" }); err != nil {
		return w, err
	}
	fmt.Fprintf(os.Stderr, "   idle %v: cores used: %s\n", d, formatCores(w.cores))
	return w, nil
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
	retried           int // upgrades tried again (see waiterSet.join)
	firstError        string
	took              time.Duration // time spent growing, the slowest client's each step
}

func (g *growth) add(answers []growAnswer) {
	g.connected, g.failed, g.retried = 0, 0, 0
	var slowest float64
	for _, a := range answers {
		g.connected += a.Connected
		g.failed += a.Failed
		g.retried += a.Retried
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

func (s *fleetState) read(ctx context.Context, f *wsFleet) error {
	var err error
	if s.rss, err = fleetRSS(f.ins); err != nil { // first: the collection below would shrink the heap
		return err
	}
	if s.goMem, err = fleetGoMemory(ctx, f.ins, true); err != nil {
		return err
	}
	s.redisMem, err = f.red.usedMemory(ctx)
	return err
}

// redisRates are what Redis ran per second over a window.
type redisRates struct {
	rounds   float64 // positions rounds: BITPOS runs in that script only, once a round
	scripts  float64 // EVALSHA and EVAL: the store's round trips
	commands float64 // every command, those inside scripts included
}

func measureRedis(ctx context.Context, red *redisServer, d time.Duration) (redisRates, error) {
	var rates redisRates
	c0, err := redisCalls(ctx, red)
	if err != nil {
		return rates, err
	}
	start := time.Now()
	if err := sleep(ctx, d); err != nil {
		return rates, err
	}
	c1, err := redisCalls(ctx, red)
	if err != nil {
		return rates, err
	}
	secs := time.Since(start).Seconds()
	for name, n := range c1 {
		if name == "info" {
			continue // ours
		}
		rate := float64(n-c0[name]) / secs
		rates.commands += rate
		switch name {
		case "evalsha", "eval":
			rates.scripts += rate
		case "bitpos":
			rates.rounds += rate
		}
	}
	return rates, nil
}

func formatCores(cores map[string]float64) string {
	return fmt.Sprintf("Caddy %.2f, clients %.2f, Redis %.2f; the rest of the machine %.2f",
		cores["Caddy"], cores["clients"], cores["Redis"], cores[othersGroup])
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
