package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func init() {
	register(section{
		name:  "key",
		about: "new visitors with `key` on (a new account header each request) and without, each vs bare Caddy (wrk), memory and Redis stores",
		order: 25,
		run:   runKey,
	})
}

// accountHeader is the header the keyed room's key reads, as a shop in front of the
// room sets it for a logged-in person.
const accountHeader = "X-Account"

// newAccountScript makes wrk send every request with an account no request has sent
// before, in this round or any other: its prefix is the round's start and a random
// number. Every target of the section runs it, bare included, so each request costs
// wrk and Caddy the same header and the rows differ by the room alone.
const newAccountScript = `math.randomseed(os.time())
local prefix = string.format("acct-%d-%d-", os.time(), math.random(1, 1000000000))
local n = 0
request = function()
  n = n + 1
  wrk.headers["` + accountHeader + `"] = prefix .. n
  return wrk.format()
end
`

// The section's rooms: every request a new visitor admitted at once, without and
// with a key.
const (
	keyRoomNew   = "capacity 1000000000"
	keyRoomKeyed = "capacity 1000000000\n\t\tkey {http.request.header." + accountHeader + "}"
)

// keyBench is one instance of the section: bare, the room without key, the room with.
type keyBench struct {
	store   httpStore
	in      *instance
	targets []wrkTarget // bare, new, keyed
}

func runKey(ctx context.Context, r *rig, o options) ([]row, error) {
	script := filepath.Join(r.dir, "new-account.lua")
	if err := os.WriteFile(script, []byte(newAccountScript), 0o644); err != nil {
		return nil, err
	}
	redis, err := r.startRedis("key-redis")
	if err != nil {
		return nil, err
	}
	var rows []row
	for _, st := range []httpStore{
		{name: "memory", config: "store memory", newGoal: 0.85},
		{name: "Redis", config: "store redis redis://" + redis.addr, newGoal: 0.50, redis: redis},
	} {
		got, err := overTransports(o, func(t transport) ([]row, error) { return measureKey(ctx, r, o, st, t, script) })
		rows = append(rows, got...)
		if err != nil {
			return rows, err
		}
	}
	return rows, nil
}

// measureKey measures one store over one transport: its own instance, warmed up.
func measureKey(ctx context.Context, r *rig, o options, st httpStore, t transport, script string) ([]row, error) {
	b, err := newKeyBench(ctx, r, st, t, script)
	if err != nil {
		return nil, err
	}
	defer b.in.stop()
	if !o.quick { // warm up: a first round on a cold instance would be the slowest
		if _, err := r.wrk(ctx, b.targets[0], httpConnections); err != nil {
			return nil, err
		}
	}
	return b.measure(ctx, r)
}

func newKeyBench(ctx context.Context, r *rig, s httpStore, t transport, script string) (*keyBench, error) {
	cfg := caddyConfig{"bare": `respond "ok"`}
	for site, settings := range map[string]string{"new": keyRoomNew, "keyed": keyRoomKeyed} {
		cfg[site] = fmt.Sprintf("\twaiting_room {\n\t\tname %s\n\t\t%s\n\t\t%s\n\t}\n\trespond \"ok\"", site, settings, s.config)
	}
	in, err := r.startCaddyOver("key-"+s.name+fileSuffix(t), cfg, t)
	if err != nil {
		return nil, err
	}
	serve := []*proc{in.proc}
	if s.redis != nil {
		serve = append(serve, s.redis.proc)
	}
	b := &keyBench{store: s, in: in}
	for _, site := range []string{"bare", "new", "keyed"} {
		b.targets = append(b.targets, wrkTarget{name: s.name + " key " + site, url: in.url(site) + "/",
			headers: browserHeaders, script: script, serve: serve})
	}
	return b, b.probe(ctx)
}

// probe holds the keyed room to being keyed: one account's two requests, without
// cookies, are one visitor, admitted once; two accounts are two.
func (b *keyBench) probe(ctx context.Context) error {
	before, err := readRoom(ctx, b.in, "keyed")
	if err != nil {
		return err
	}
	// Accounts of this instance's own: the Redis one shares its store with the other
	// transport's instance, where a probe's accounts are known already.
	a, c := "probe-a-"+b.in.admin, "probe-b-"+b.in.admin
	for _, account := range []string{a, a, c} {
		resp, body, err := get(ctx, b.in.url("keyed")+"/", append([]string{accountHeader + ": " + account}, browserHeaders...))
		if err != nil {
			return err
		}
		if body != "ok" || len(resp.Cookies()) != 1 || resp.Cookies()[0].Name != "waiting_room_keyed" {
			return fmt.Errorf("%s: the keyed room's probe for %s answered %d %.60q", b.store.name, account, resp.StatusCode, body)
		}
	}
	after, err := readRoom(ctx, b.in, "keyed")
	if err != nil {
		return err
	}
	if n := after.AdmittedTotal - before.AdmittedTotal; n != 2 {
		return fmt.Errorf("%s: three requests of two accounts made %d admissions, want 2: the key is not in effect", b.store.name, n)
	}
	return nil
}

// measure runs the interleaved rounds and returns the rows: each room against bare,
// keyed against no key, and on Redis the store's round trips per new visitor of each.
// The rooms' counters must show every request of both rooms as a new admission: a
// key repeated (or a visitor let in on a cookie) would leave some uncounted.
func (b *keyBench) measure(ctx context.Context, r *rig) ([]row, error) {
	samples := map[string][]float64{}
	var requests [3]int64
	var scripts [3]int64 // the Redis scripts run during each target's rounds
	before := map[string]roomCounters{}
	for _, site := range []string{"new", "keyed"} {
		c, err := readRoom(ctx, b.in, site)
		if err != nil {
			return nil, err
		}
		before[site] = c
	}
	for range r.o.rounds {
		for i, t := range b.targets {
			var s0 int64
			if b.store.redis != nil {
				var err error
				if s0, _, err = b.store.redis.commands(ctx); err != nil {
					return nil, err
				}
			}
			res, _, err := r.wrkRound(ctx, t, httpConnections)
			if err != nil {
				return nil, err
			}
			if b.store.redis != nil {
				s1, _, err := b.store.redis.commands(ctx)
				if err != nil {
					return nil, err
				}
				scripts[i] += s1 - s0
			}
			samples[t.name] = append(samples[t.name], res.rps)
			requests[i] += res.requests
		}
	}
	for i, t := range b.targets {
		fmt.Fprintf(os.Stderr, "   %-24s %s req/s\n", t.name, strings.Join(nums(samples[t.name]), ", "))
		if i == 0 {
			continue
		}
		site := t.name[strings.LastIndexByte(t.name, ' ')+1:]
		after, err := readRoom(ctx, b.in, site)
		if err != nil {
			return nil, err
		}
		if a := int64(after.AdmittedTotal - before[site].AdmittedTotal); a < requests[i] || after.Waiting != 0 {
			return nil, fmt.Errorf("%s: %d requests of new visitors, but the room admitted %d and has %d waiting", t.name, requests[i], a, after.Waiting)
		}
	}
	s := b.store.name
	bare, unkeyed, keyed := samples[b.targets[0].name], samples[b.targets[1].name], samples[b.targets[2].name]
	rows := []row{
		roundsRow(s+": new visitor admitted at join, no key", unkeyed, bare, "req/s", b.store.newGoal),
		roundsRow(s+": new visitor admitted at join, keyed (a new account each request: placeholder, HMAC)", keyed, bare, "req/s", b.store.newGoal),
		roundsRow(s+": new visitor, keyed vs no key", keyed, unkeyed, "req/s", 0),
	}
	if b.store.redis != nil {
		// The store batches concurrent joins into one script, so a join costs less than
		// one; a keyed join that asked the store first would cost one more. The count
		// includes the admission step's ticks (a few a second per room), alike for both.
		per := func(i int) float64 { return float64(scripts[i]) / float64(requests[i]) }
		rows = append(rows, row{
			figure:   s + ": store round trips (EVALSHA) per keyed new visitor, joins batched, the rooms' ticks included (vs no key)",
			value:    fmt.Sprintf("%.3f", per(2)),
			baseline: fmt.Sprintf("%.3f", per(1)),
			ratio:    fmt.Sprintf("%.2f", per(2)/per(1)),
			target:   "≤ 1",
			verdict:  verdict(per(2) <= 1),
		})
	}
	return rows, nil
}
