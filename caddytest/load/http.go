package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

func init() {
	register(section{
		name:  "http",
		about: "requests per second through the room vs the same site without it (wrk), memory and Redis stores",
		order: 20,
		run:   runHTTP,
	})
}

// httpConnections is wrk's connection count for every target: enough to keep Caddy
// busy on two cores, few enough that wrk's one thread is not the bottleneck.
const httpConnections = 50

// The headers of a browser; every target of an instance is sent them, bare included,
// so the room's figures differ from bare by the room alone. The Cookie header is the
// admitted room's cookie: the other rooms ignore it (it names another room), so their
// visitors are new, but they still read past it as they would a browser's cookies.
// Browsers all take gzip, so the queued browser gets the waiting page gzipped; the
// bare sites have no encode and answer as they would without it.
const (
	browserAccept   = "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	browserEncoding = "Accept-Encoding: gzip, deflate, br, zstd"
	jsonAccept      = "Accept: application/json"
)

// browserHeaders are what a browser sends, less its cookies.
var browserHeaders = []string{browserAccept, browserEncoding}

// httpRoom is one room site of an instance and the path it puts a visitor on.
type httpRoom struct {
	site   string // also the room's name
	figure string
	config string // the waiting_room block's settings, without name and store
}

// The rooms every instance serves, beside a bare site answering the same "ok". The
// queued room's one slot goes to the first visitor (the rig's health check), so
// everyone after is queued; every waiter keeps the place for the whole run.
var httpRooms = []httpRoom{
	{"admitted", "admitted visitor (valid room cookie)", "capacity 1000000000\n\t\tsession_ttl 1h"},
	{"new", "new visitor admitted at join (join, sign, Set-Cookie)", "capacity 1000000000"},
	{"queued", "new visitor queued, waiting page (join, Set-Cookie, HTML)", "capacity 1\n\t\tsession_ttl 1h\n\t\tqueue_ttl 1h"},
}

// httpStore is one instance of the section: a store and the figures it must reach.
type httpStore struct {
	name    string
	config  string       // the rooms' store directive
	newGoal float64      // new visitors (admitted or queued) vs bare: the design's target
	redis   *redisServer // the store's server, nil for memory
}

func runHTTP(ctx context.Context, r *rig, o options) ([]row, error) {
	page, err := waitingPageSize(ctx, r)
	if err != nil {
		return nil, err
	}
	// Every transport's instances and their rounds run together, interleaved, so
	// that the plain and TLS rows compare; each Redis instance has a Redis of its
	// own, as the rooms' counters must be the instance's alone (check).
	var benches []*httpBench
	var targets []wrkTarget
	for _, t := range o.transports() {
		redis, err := r.startRedis("http-redis" + fileSuffix(t))
		if err != nil {
			return nil, err
		}
		stores := []httpStore{
			{name: "memory", config: "store memory", newGoal: 0.85},
			{name: "Redis", config: "store redis redis://" + redis.addr, newGoal: 0.50, redis: redis},
		}
		for _, s := range stores {
			b, err := newHTTPBench(ctx, r, s, t, page)
			if err != nil {
				return nil, err
			}
			benches = append(benches, b)
			targets = append(targets, b.targets...)
		}
	}
	for _, b := range benches {
		if !o.quick { // warm up: a first round on a cold instance would be the slowest
			if _, err := r.wrk(ctx, b.targets[0], httpConnections); err != nil {
				return nil, err
			}
		}
		if err := b.snapshot(ctx, b.before); err != nil {
			return nil, err
		}
	}
	res, err := r.wrkRuns(ctx, targets, httpConnections)
	if err != nil {
		return nil, err
	}
	byStore := map[string][][]row{}
	for _, b := range benches {
		if err := b.snapshot(ctx, b.after); err != nil {
			return nil, err
		}
		if err := b.check(res); err != nil {
			return nil, err
		}
		byStore[b.store.name] = append(byStore[b.store.name], b.rows(res))
	}
	var rows []row
	for _, s := range []string{"memory", "Redis"} {
		rows = append(rows, pairRows(byStore[s]...)...)
	}
	if o.profiles != "" {
		for _, b := range benches {
			if err := b.profile(ctx, r); err != nil {
				return rows, err
			}
		}
	}
	return rows, nil
}

// waitingPageSize is the size of the waiting page a queued browser gets, as sent
// (gzipped), from a throwaway instance, so that a bare site can answer as many bytes.
// get names Accept-Encoding itself, so Go's transport leaves the body as it came.
func waitingPageSize(ctx context.Context, r *rig) (int, error) {
	in, err := r.startCaddy("http-page-size", caddyConfig{"queued": "\twaiting_room {\n\t\tname queued\n\t\t" + httpRooms[2].config + "\n\t}\n\trespond \"ok\""})
	if err != nil {
		return 0, err
	}
	defer in.stop()
	resp, body, err := get(ctx, in.url("queued")+"/", browserHeaders)
	if err != nil {
		return 0, err
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || resp.Uncompressed {
		return 0, fmt.Errorf("measuring the waiting page: got %s, status %d, inflated by the client %v",
			resp.Header.Get("Content-Type"), resp.StatusCode, resp.Uncompressed)
	}
	fmt.Fprintf(os.Stderr, "   the waiting page: %d bytes as sent (Content-Encoding %q)\n", len(body), resp.Header.Get("Content-Encoding"))
	return len(body), nil
}

// oneWriteBody is the body of a bare site that, with its headers, still fits the 4 KiB
// buffer net/http writes a connection through: its answer is one write(2), where the
// waiting page's (~5 KB, with ~0.75 KB of headers) is two. On loopback a write costs
// the sender the receiver's TCP work too, so the second write, not the bytes, is most
// of what a page of this size costs; this row shows that apart from the room.
const oneWriteBody = 3000

// httpBench is one instance: its targets (bare first) and the room counters around the
// measured rounds, which prove each target took the path its row names.
type httpBench struct {
	store         httpStore
	label         string // the store, and the transport unless plain: "memory", "memory TLS"
	in            *instance
	targets       []wrkTarget
	before, after map[string]roomCounters
}

func newHTTPBench(ctx context.Context, r *rig, s httpStore, t transport, page int) (*httpBench, error) {
	cfg := caddyConfig{"bare": `respond "ok"`, "barepage": fmt.Sprintf("respond %q", strings.Repeat("x", page)),
		"barefit": fmt.Sprintf("respond %q", strings.Repeat("x", oneWriteBody))}
	for _, rm := range httpRooms {
		cfg[rm.site] = fmt.Sprintf("\twaiting_room {\n\t\tname %s\n\t\t%s\n\t\t%s\n\t}\n\trespond \"ok\"", rm.site, rm.config, s.config)
	}
	in, err := r.startCaddyOver("http-"+s.name+fileSuffix(t), cfg, t)
	if err != nil {
		return nil, err
	}
	label := strings.TrimSpace(s.name + " " + t.label())
	b := &httpBench{store: s, label: label, in: in, before: map[string]roomCounters{}, after: map[string]roomCounters{}}
	cookie, err := admittedCookie(ctx, in.url("admitted"))
	if err != nil {
		return nil, err
	}
	browser := append([]string{"Cookie: " + cookie}, browserHeaders...)
	api := []string{"Cookie: " + cookie, jsonAccept}
	serve := []*proc{in.proc}
	if s.redis != nil {
		serve = append(serve, s.redis.proc)
	}
	b.targets = []wrkTarget{
		{name: label + " bare", url: in.url("bare") + "/", headers: browser, serve: serve},
		{name: label + " admitted", url: in.url("admitted") + "/", headers: browser, serve: serve},
		{name: label + " new", url: in.url("new") + "/", headers: browser, serve: serve},
		{name: label + " queued", url: in.url("queued") + "/", headers: browser, serve: serve},
		{name: label + " queued JSON", url: in.url("queued") + "/", headers: api, serve: serve},
		{name: label + " bare page", url: in.url("barepage") + "/", headers: browser, serve: serve},
		{name: label + " bare 3 KB", url: in.url("barefit") + "/", headers: browser, serve: serve},
	}
	return b, b.probe(ctx)
}

func (b *httpBench) snapshot(ctx context.Context, into map[string]roomCounters) error {
	for _, rm := range httpRooms {
		c, err := readRoom(ctx, b.in, rm.site)
		if err != nil {
			return err
		}
		into[rm.site] = c
	}
	return nil
}

// check holds the rounds to what their rows claim, from the rooms' own counters: the
// admitted target never became a new visitor, and every request of the new and queued
// targets was a new visitor, admitted or queued. A room counts at least what wrk saw
// answered (requests in flight when a round ends are counted by the room only).
func (b *httpBench) check(res map[string]wrkResult) error {
	delta := func(site string) (admitted, waiting int64) {
		return int64(b.after[site].AdmittedTotal - b.before[site].AdmittedTotal),
			int64(b.after[site].Waiting - b.before[site].Waiting)
	}
	s := b.label
	if a, w := delta("admitted"); a != 0 || w != 0 {
		return fmt.Errorf("%s: the admitted target made %d new admissions and %d waiters: its cookie stopped working", s, a, w)
	}
	if a, w := delta("new"); a < res[s+" new"].requests || w != 0 {
		return fmt.Errorf("%s: %d requests of new visitors, but the room admitted %d and queued %d", s, res[s+" new"].requests, a, w)
	}
	queued := res[s+" queued"].requests + res[s+" queued JSON"].requests
	if a, w := delta("queued"); a != 0 || w < queued {
		return fmt.Errorf("%s: %d requests of new visitors to a full room, but it admitted %d and queued %d", s, queued, a, w)
	}
	return nil
}

// rows are the throughput of each room target against bare, with the design's targets
// (listed under docs/performance.md's table), then the same targets' cost: requests
// per CPU second of the serving processes, which the neighbours on a shared machine
// hardly move (no target: a cross-check).
func (b *httpBench) rows(res map[string]wrkResult) []row {
	s := b.label
	figures := []struct {
		target, figure string
		goal           float64
	}{
		{"admitted", httpRooms[0].figure, 0.90},
		{"new", httpRooms[1].figure, b.store.newGoal},
		{"queued", httpRooms[2].figure, b.store.newGoal},
		{"queued JSON", "new visitor queued, JSON (Accept: application/json)", b.store.newGoal},
	}
	servers := "Caddy"
	if b.store.redis != nil {
		servers = "Caddy and Redis"
	}
	bare := res[s+" bare"]
	var rows []row
	for _, f := range figures {
		rows = append(rows, roundsRow(s+": "+f.figure, res[s+" "+f.target].samples, bare.samples, "req/s", f.goal))
	}
	// The waiting page is ~5 KB gzipped (~11 KB plain) where bare answers 2 bytes;
	// against a bare site that answers as many bytes as the page is sent in, what is
	// left is the room's own cost (no target: a cross-check).
	rows = append(rows, roundsRow(s+": new visitor queued, waiting page, vs a bare site answering a body of the page's size",
		res[s+" queued"].samples, res[s+" bare page"].samples, "req/s", 0))
	rows = append(rows,
		roundsRow(s+": bare site answering 3 KB (one write) vs bare", res[s+" bare 3 KB"].samples, bare.samples, "req/s", 0),
		roundsRow(s+": bare site answering the page's size (two writes) vs bare", res[s+" bare page"].samples, bare.samples, "req/s", 0))
	for _, f := range figures {
		rows = append(rows, roundsRow(fmt.Sprintf("%s: %s, per CPU second of %s", s, f.target, servers),
			res[s+" "+f.target].perCPU, bare.perCPU, "req/CPU-s", 0))
	}
	return rows
}

// profile takes a CPU profile of the instance during one extra round of each room
// target, and of bare Caddy, the base to read the room's against (go tool pprof
// -diff_base http-memory-bare.pprof http-memory-admitted.pprof). The round is not
// counted: profiling costs the instance a little.
func (b *httpBench) profile(ctx context.Context, r *rig) error {
	for _, t := range b.targets {
		if kind := t.name[len(b.label)+1:]; strings.HasPrefix(kind, "bare") && kind != "bare" {
			continue // the other bare sites are baselines of the page's size
		}
		if err := r.profileRound(ctx, b.in, t, fmt.Sprintf("http-%s.pprof", fileName(t.name))); err != nil {
			return err
		}
	}
	return nil
}

// profileRound takes a CPU profile of in into file during one extra round of t, which
// is not counted.
func (r *rig) profileRound(ctx context.Context, in *instance, t wrkTarget, file string) error {
	wait := r.profileBeside(in, "profile", r.roundLength(t), file)
	_, err := r.wrk(ctx, t, httpConnections)
	perr := wait()
	switch {
	case errors.Is(err, errRequestsFailed): // the round is not counted; the profile stands
		fmt.Fprintf(os.Stderr, "   (some requests of the profiled round of %s failed)\n", t.name)
	case err != nil:
		return err
	}
	if perr != nil {
		return fmt.Errorf("profiling %s: %w", t.name, perr)
	}
	fmt.Fprintf(os.Stderr, "   CPU profile of %s: %s/%s\n", t.name, r.o.profiles, file)
	return nil
}
