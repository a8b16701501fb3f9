package main

import (
	"fmt"
	"runtime"
	"time"
)

// wsRows are the ws section's figures: the crowd held, what it heard in each idle
// window, memory per waiter, and what Redis ran at each population.
func wsRows(o options, plan wsPlan, g growth, windows []idleWindow, before, after fleetState, sockets int) []row {
	requested := plan.populations[len(plan.populations)-1]
	held := fmt.Sprintf("%d of %d", g.connected, requested)
	if g.retried > 0 {
		held += fmt.Sprintf(" (%d WebSocket upgrades refused and retried, as the page does)", g.retried)
	}
	if g.failed > 0 {
		held += fmt.Sprintf(" (%d failed, first%s)", g.failed, g.firstError)
	}
	rows := []row{
		{figure: fmt.Sprintf("waiting WebSockets held (%d instances, %d client processes, one Redis)", o.instances, o.clients),
			value: held, target: "all", verdict: verdict(g.connected == requested)},
		{figure: "  ramp: join + upgrade per waiter, all clients together",
			value: num(float64(g.connected)/g.took.Seconds()) + " /s"},
	}
	for _, w := range windows {
		rows = append(rows, heardRows(w)...)
	}
	rows = append(rows, memoryRows(before, after, sockets)...)
	return append(rows, redisRows(windows)...)
}

// heardRows: how many waiters heard from the room in time during one idle window.
func heardRows(w idleWindow) []row {
	var within, ended, admitted, silent, messages, together int
	var gaps, readGaps []int
	var secs float64
	for _, rep := range w.heard {
		within += rep.Within
		ended += rep.EndedN
		admitted += rep.Admitted
		together += rep.Together
		gaps = append(gaps, rep.MaxGapMillis...)
		readGaps = append(readGaps, rep.ReadMaxGapMillis...)
		secs = max(secs, rep.WindowSeconds)
		for _, n := range rep.Messages {
			messages += n
			if n == 0 {
				silent++
			}
		}
	}
	waiting, what := w.waiters, fmt.Sprintf("%.0f s idle", secs)
	if w.moving > 0 {
		// Those admitted are done waiting (and are the ones the line moved for).
		waiting, what = w.waiters-admitted, fmt.Sprintf("%.0f s with the line moving (%d admitted from the head every %v)", secs, w.moving, pushRound)
	}
	perSecond := float64(messages) / secs
	micros := func(cores float64) string { return fmt.Sprintf("%.0f µs", cores/max(perSecond, 1)*1e6) }
	sec := func(ms int) string { return fmt.Sprintf("%.2f s", float64(ms)/1000) }
	spread := func(v []int) string {
		return sec(percentile(v, 0.5)) + " / " + sec(percentile(v, 0.99)) + " / " + sec(percentile(v, 1))
	}
	p99 := percentile(gaps, 0.99)
	rows := []row{
		ratioRow(fmt.Sprintf("%s waiters, %s: told at least every %v (longest silence at the socket ≤ %v)",
			num(float64(waiting)), what, promisedSilence, silenceBound),
			float64(within), float64(waiting), "waiters", 1),
		{figure: "  longest silence per waiter, by when messages reached the socket: p50 / p99 / max",
			value:  spread(gaps),
			target: "p99 ≤ " + silenceBound.String(), verdict: verdict(len(gaps) > 0 && time.Duration(p99)*time.Millisecond <= silenceBound)},
		{figure: "  … by when the client process read them (its own lateness added)", value: spread(readGaps)},
		// The kernel dates what waits unread by the latest arrival, so a client
		// process that fell a message behind makes a silence at the socket look
		// longer than it was: the silences above are then upper bounds.
		{figure: "  messages the client process read together with a later one, and so dated by it",
			value: fmt.Sprintf("%d of %d (%.1f %%)", together, messages, 100*float64(together)/float64(max(messages, 1)))},
	}
	if w.moving > 0 {
		rows = append(rows,
			row{figure: "  told admitted (the line moved for them)", value: fmt.Sprint(admitted)},
			row{figure: "  sockets ended without an admission, or silent throughout", value: fmt.Sprint(ended + silent),
				target: "0", verdict: verdict(ended+silent == 0)})
	} else {
		rows = append(rows, row{figure: "  sockets ended, told admitted, or silent throughout", value: fmt.Sprint(ended + admitted + silent),
			target: "0", verdict: verdict(ended+admitted+silent == 0)})
	}
	return append(rows,
		row{figure: fmt.Sprintf("  cores used (of %d, on a shared machine)", runtime.NumCPU()),
			value: formatCores(w.cores)},
		row{figure: "  messages pushed; CPU ÷ messages: Caddy / clients",
			value: fmt.Sprintf("%s /s; %s / %s", num(perSecond), micros(w.cores["Caddy"]), micros(w.cores["clients"]))})
}

func memoryRows(before, after fleetState, held int) []row {
	kib := func(b float64) string { return fmt.Sprintf("%.1f KiB", b/1024) }
	perWaiter := func(b float64) float64 { return b / float64(max(held, 1)) }
	goBefore, goAfter := before.goMem, after.goMem
	goPer := perWaiter(goAfter.heap + goAfter.stacks - goBefore.heap - goBefore.stacks)
	rssPer := perWaiter(float64(after.rss - before.rss))
	redisPer := perWaiter(float64(after.redisMem - before.redisMem))
	return []row{
		{figure: "server memory per waiter (RSS of all instances, with waiters − before)",
			value: kib(rssPer), baseline: fmt.Sprintf("%.0f MiB before", float64(before.rss)/(1<<20)),
			target: "≤ 20 KiB", verdict: verdict(held > 0 && rssPer <= 20*1024)},
		{figure: "  of which Go heap + goroutine stacks in use (after a collection)",
			value: fmt.Sprintf("%s (heap %s, stacks %s)", kib(goPer),
				kib(perWaiter(goAfter.heap-goBefore.heap)), kib(perWaiter(goAfter.stacks-goBefore.stacks)))},
		{figure: "  goroutines per waiter", value: fmt.Sprintf("%.2f", perWaiter(goAfter.goroutines-goBefore.goroutines))},
		{figure: "Redis used_memory per waiter", value: fmt.Sprintf("%.0f B", redisPer),
			target: "≤ 200 B", verdict: verdict(held > 0 && redisPer <= 200)},
	}
}

// redisRows: the position pushes' Redis cost at each population, against the
// smallest, and everything Redis ran (heartbeats, which do grow with the waiters: a
// few commands per waiter every 10 s).
func redisRows(windows []idleWindow) []row {
	var rows []row
	base := windows[0]
	for _, w := range windows {
		ratio := w.redis.rounds / base.redis.rounds
		value := fmt.Sprintf("%.1f /s", w.redis.rounds)
		if ratio < 0.8 {
			value += " (rounds late: the instances were short of CPU)"
		}
		rows = append(rows, row{
			figure: fmt.Sprintf("position pushes at %s waiters: Redis script runs/s (1 run, 4 commands, per instance per round)",
				num(float64(w.waiters))),
			value:    value,
			baseline: fmt.Sprintf("%.1f /s at %s", base.redis.rounds, num(float64(base.waiters))),
			ratio:    fmt.Sprintf("%.2f", ratio),
			target:   "≤ 1.25 (does not grow)", verdict: verdict(ratio <= 1.25),
		})
	}
	for _, w := range windows {
		rows = append(rows, row{
			figure:   fmt.Sprintf("  everything Redis ran while idle at %s waiters (held waiters cost a lease per instance, not a heartbeat each)", num(float64(w.waiters))),
			value:    fmt.Sprintf("%s commands/s in %s script runs/s", num(w.redis.commands), num(w.redis.scripts)),
			baseline: fmt.Sprintf("%s commands/s", num(base.redis.commands)),
			ratio:    fmt.Sprintf("%.2f", w.redis.commands/base.redis.commands),
		})
	}
	return rows
}

// wsCost is what the waiters cost a fleet at full load, for comparing transports.
type wsCost struct {
	waiters       int
	rssPerWaiter  float64 // bytes
	goPerWaiter   float64 // bytes of heap and stacks in use
	cpuPerMessage float64 // Caddy's CPU seconds per message pushed, in the idle window
}

func costOf(w idleWindow, before, after fleetState, held int) wsCost {
	var messages int
	var secs float64
	for _, rep := range w.heard {
		secs = max(secs, rep.WindowSeconds)
		for _, n := range rep.Messages {
			messages += n
		}
	}
	n := float64(max(held, 1))
	return wsCost{
		waiters:       w.waiters,
		rssPerWaiter:  float64(after.rss-before.rss) / n,
		goPerWaiter:   (after.goMem.heap + after.goMem.stacks - before.goMem.heap - before.goMem.stacks) / n,
		cpuPerMessage: w.cores["Caddy"] * secs / float64(max(messages, 1)),
	}
}

// tlsCostRows: what a waiter over TLS costs beside one over plain HTTP, same run.
func tlsCostRows(plain, secure wsCost) []row {
	kib := func(b float64) string { return fmt.Sprintf("%.1f KiB", b/1024) }
	us := func(s float64) string { return fmt.Sprintf("%.1f µs", s*1e6) }
	ratio := func(a, b float64) float64 { return a / max(b, 1e-12) }
	mem, goMem, cpu := ratio(secure.rssPerWaiter, plain.rssPerWaiter), ratio(secure.goPerWaiter, plain.goPerWaiter),
		ratio(secure.cpuPerMessage, plain.cpuPerMessage)
	return []row{
		{figure: "TLS ÷ plain: server memory per waiter (RSS)", value: kib(secure.rssPerWaiter), baseline: kib(plain.rssPerWaiter),
			ratio: fmt.Sprintf("%.2f", mem), target: "≤ 1.30 (aim)", verdict: verdict(mem <= 1.30)},
		{figure: "  … Go heap + goroutine stacks in use", value: kib(secure.goPerWaiter), baseline: kib(plain.goPerWaiter),
			ratio: fmt.Sprintf("%.2f", goMem)},
		{figure: fmt.Sprintf("TLS ÷ plain: Caddy CPU per message pushed, %s waiters idle", num(float64(secure.waiters))),
			value: us(secure.cpuPerMessage), baseline: us(plain.cpuPerMessage),
			ratio: fmt.Sprintf("%.2f", cpu), target: "≤ 1.50", verdict: verdict(cpu <= 1.50)},
	}
}
