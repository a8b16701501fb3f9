package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func init() {
	register(section{
		name:  "durable",
		about: "the memory store kept on disk (the default) against `file off`: joins and the admitted visitor, in short alternating rounds, with the ratio's 95 % interval",
		order: 26,
		run:   runDurable,
	})
}

// The embedded store saves its state to a file once a second, behind the hot path:
// one copy of the state under the store's lock, then the encoding and the write. This
// section measures what that costs requests, on one instance serving the same rooms
// twice, durable (the default) and in memory only (`store memory { file off }`), in
// rounds that take turns as the admitted section's do:
//
//   - the admitted visitor, whose request never waits for the store;
//   - a new visitor queued in a full room (join, Set-Cookie, JSON): every request
//     a join, which takes the store's lock, and the line grows with the rounds, so
//     the saves grow with it.
const (
	durableGoal   = 0.95
	durableRounds = 10
	durableRound  = 2 * time.Second
)

// durableRooms are the section's room sites, each twice: "-on" kept on disk, "-off"
// not.
var durableRooms = []struct{ site, config string }{
	{"admitted", "capacity 1000000000\n\t\tsession_ttl 1h"},
	{"join", "capacity 1\n\t\tsession_ttl 1h\n\t\tqueue_ttl 1h"},
}

// durableStores are the two sides, by the suffix of their sites' names.
var durableStores = map[string]string{
	"on":  "store memory",
	"off": "store memory {\n\t\t\tfile off\n\t\t}",
}

func runDurable(ctx context.Context, r *rig, o options) ([]row, error) {
	rounds, length := durableRounds, durableRound
	if o.quick {
		rounds, length = 2, time.Second
	}
	return overTransports(o, func(t transport) ([]row, error) { return measureDurable(ctx, r, t, rounds, length) })
}

func measureDurable(ctx context.Context, r *rig, t transport, rounds int, length time.Duration) ([]row, error) {
	cfg := caddyConfig{}
	for _, rm := range durableRooms {
		for side, store := range durableStores {
			site := rm.site + "-" + side
			cfg[site] = fmt.Sprintf("\twaiting_room {\n\t\tname %s\n\t\t%s\n\t\t%s\n\t}\n\trespond \"ok\"", site, rm.config, store)
		}
	}
	name := "durable" + fileSuffix(t)
	in, err := r.startCaddyOver(name, cfg, t)
	if err != nil {
		return nil, err
	}
	defer in.stop()
	var cookies []string
	for _, side := range []string{"on", "off"} {
		c, err := admittedCookie(ctx, in.url("admitted-"+side))
		if err != nil {
			return nil, err
		}
		cookies = append(cookies, c)
	}
	// Every target gets the same headers, both rooms' cookies included: the join
	// rooms ignore them (they name other rooms), so their visitors are new.
	headers := []string{"Cookie: " + strings.Join(cookies, "; "), jsonAccept}
	var targets []wrkTarget
	for _, site := range []string{"admitted-on", "admitted-off", "join-on", "join-off"} {
		targets = append(targets, wrkTarget{name: site, url: in.url(site) + "/", headers: headers, serve: []*proc{in.proc}, duration: length})
	}
	before := map[string]roomCounters{}
	for _, tg := range targets {
		if before[tg.name], err = readRoom(ctx, in, tg.name); err != nil {
			return nil, err
		}
	}
	for _, tg := range targets[:2] { // warm up; the join rooms' lines start empty alike
		if _, err := r.wrk(ctx, tg, httpConnections); err != nil {
			return nil, err
		}
	}
	rps, perCPU, requests := map[string][]float64{}, map[string][]float64{}, map[string]int64{}
	for i := range rounds {
		for k := range targets {
			tg := targets[(i+k)%len(targets)]
			res, cpu, err := r.wrkRound(ctx, tg, httpConnections)
			if err != nil {
				return nil, err
			}
			rps[tg.name], perCPU[tg.name] = append(rps[tg.name], res.rps), append(perCPU[tg.name], cpu)
			requests[tg.name] += res.requests
		}
	}
	for _, tg := range targets {
		after, err := readRoom(ctx, in, tg.name)
		if err != nil {
			return nil, err
		}
		a, w := int64(after.AdmittedTotal-before[tg.name].AdmittedTotal), int64(after.Waiting-before[tg.name].Waiting)
		switch {
		case strings.HasPrefix(tg.name, "admitted") && (a != 0 || w != 0):
			return nil, fmt.Errorf("%s%s: %d new admissions and %d waiters during the rounds: the cookie stopped working", tg.name, fileSuffix(t), a, w)
		case strings.HasPrefix(tg.name, "join") && (a != 0 || w < requests[tg.name]):
			return nil, fmt.Errorf("%s%s: %d joins answered, but the room admitted %d and queued %d", tg.name, fileSuffix(t), requests[tg.name], a, w)
		}
	}
	waiting, size, err := savedRooms(in, filepath.Join(r.dir, name), "join-on")
	if err != nil {
		return nil, err
	}
	for _, tg := range targets {
		fmt.Fprintf(os.Stderr, "   %s %s: %s req/s\n", t.scheme(), tg.name, strings.Join(nums(rps[tg.name]), ", "))
	}
	figure := fmt.Sprintf(", kept on disk ÷ `file off`, %d rounds of %v taking turns", rounds, length)
	return []row{
		intervalRow("admitted visitor"+figure+": requests per second", rps["admitted-on"], rps["admitted-off"], "req/s", durableGoal),
		intervalRow("  the same: requests per CPU second of Caddy", perCPU["admitted-on"], perCPU["admitted-off"], "req/CPU-s", 0),
		intervalRow("new visitor queued (join, JSON)"+figure+": joins per second", rps["join-on"], rps["join-off"], "joins/s", durableGoal),
		intervalRow("  the same: joins per CPU second of Caddy", perCPU["join-on"], perCPU["join-off"], "joins/CPU-s", 0),
		{figure: "  the line kept on disk at the end, and its state file's size per waiter", value: fmt.Sprintf("%s waiters, %.1f B each", num(float64(waiting)), float64(size)/float64(waiting))},
	}, nil
}

// savedRooms checks that the instance (its run folder dir) keeps a state file for each
// room kept on disk and none for the others, and returns the waiters of the room
// named room and the size of its file, after a save that holds them all.
func savedRooms(in *instance, dir, room string) (waiting int, size int64, err error) {
	files := filepath.Join(dir, "data", "caddy", "waiting_room")
	var want []string
	for _, rm := range durableRooms {
		want = append(want, rm.site+"-on.state")
	}
	c, err := readRoom(context.Background(), in, room)
	if err != nil {
		return 0, 0, err
	}
	time.Sleep(2 * time.Second) // a save or two after the last join: the file holds every waiter
	entries, err := os.ReadDir(files)
	if err != nil {
		return 0, 0, fmt.Errorf("the rooms kept on disk saved nothing: %w", err)
	}
	var got []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".state") {
			got = append(got, e.Name())
		}
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return 0, 0, fmt.Errorf("state files %v in %s, want %v: a room with `file off` saved, or one kept on disk did not", got, files, want)
	}
	fi, err := os.Stat(filepath.Join(files, room+".state"))
	if err != nil {
		return 0, 0, err
	}
	return c.Waiting, fi.Size(), nil
}
