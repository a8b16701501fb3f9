package redisstore

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
)

// allScripts is every script of scripts.go; TestEveryLuaFileIsAScript keeps it whole.
var allScripts = []*luaScript{
	joinScript, passJoinScript, statusScript, touchScript, heartbeatScript, holdScript,
	releaseScript, leaveScript, stepScript, shuffleScript, resetScript, positionsScript,
	statsScript, swapOverridesScript, onceScript, timeScript, reportScript, moveScript,
	fleetScript, drawCommitScript, drawCloseScript, drawPlaceScript, presentScript,
}

// A script's error names the line of lua/ it came from, whether that line is in the
// script's own file or in the part of prelude.lua it was given: each case makes a real
// redis-server raise an error on a known line.
func TestScriptErrorNamesItsLine(t *testing.T) {
	srv := testredis.Start(t)
	mod := provision(t, &Redis{URL: "redis://" + srv.Addr, Timeout: caddy.Duration(5 * time.Second)})
	s := open(t, mod)
	ctx := context.Background()
	now := time.Now()
	lim := queue.Limits{Capacity: 1, SessionTTL: time.Hour, QueueTTL: time.Hour, AwayTTL: time.Hour}
	admitted, waiting := queue.NewVisitorID(), queue.NewVisitorID()
	for _, id := range []queue.VisitorID{admitted, waiting} {
		if _, err := s.Join(ctx, id, now, lim); err != nil {
			t.Fatal(err)
		}
	}

	tests := []struct {
		name string
		err  func() error
		file string
		line string // the one line of file the error comes from
	}{
		{
			// A command's error, on the script's own line, past the whole prelude.
			name: "own line after the room prelude",
			err:  func() error { return s.run(ctx, touchScript, admitted[:], "not a number").Err() },
			file: "touch.lua",
			line: "redis.call('ZADD', active, 'XX', 'GT', ARGV[2], ARGV[1])",
		},
		{
			// A Lua error inside a helper of the prelude, called from status.lua.
			name: "prelude line",
			err:  func() error { return s.run(ctx, statusScript, waiting[:], "not a number").Err() },
			file: "prelude.lua",
			line: "local r = now - epoch",
		},
		{
			// A script given only the deadline part of the prelude.
			name: "own line after the deadline part",
			err: func() error {
				err := onceScript.Run(ctx, s.shared.client, []string{s.onceKey("line")}, 0, "not a number").Err()
				return onceScript.locate(err)
			},
			file: "once.lua",
			line: "if at <= now then return 0 end",
		},
	}
	where := regexp.MustCompile(`\(lua/([a-z_]+\.lua):(\d+)\)$`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines := strings.Split(luaFile(tt.file), "\n")
			if count(lines, tt.line) != 1 {
				t.Fatalf("%s does not have the line %q exactly once", tt.file, tt.line)
			}
			err := tt.err()
			if err == nil {
				t.Fatal("no error")
			}
			m := where.FindStringSubmatch(err.Error())
			if m == nil {
				t.Fatalf("error names no line of lua/: %v", err)
			}
			n, _ := strconv.Atoi(m[2])
			if m[1] != tt.file || n < 1 || n > len(lines) || strings.TrimSpace(lines[n-1]) != tt.line {
				got := ""
				if content, err := luaFiles.ReadFile("lua/" + m[1]); err == nil {
					if ls := strings.Split(string(content), "\n"); n >= 1 && n <= len(ls) {
						got = ls[n-1]
					}
				}
				t.Fatalf("error names %s:%d (%q), want the line %q of %s\n%v", m[1], n, got, tt.line, tt.file, err)
			}
		})
	}
}

// count is how many of lines are line, leading and trailing blanks aside.
func count(lines []string, line string) int {
	n := 0
	for _, l := range lines {
		if strings.TrimSpace(l) == line {
			n++
		}
	}
	return n
}

// Every file of lua/ is a script of scripts.go or the prelude, and allScripts has
// every script.
func TestEveryLuaFileIsAScript(t *testing.T) {
	var files []string
	entries, err := fs.ReadDir(luaFiles, "lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		files = append(files, e.Name())
	}

	// The files the package's Go code makes scripts of, read from its source, so a
	// script missing from allScripts is found too.
	var made []string
	fset := token.NewFileSet()
	gofiles, _ := filepath.Glob("*.go")
	for _, name := range gofiles {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if fn, ok := call.Fun.(*ast.Ident); ok && fn.Name == "newLuaScript" {
				lit, ok := call.Args[0].(*ast.BasicLit)
				if !ok {
					t.Errorf("%s: newLuaScript of a file that is not a literal", fset.Position(call.Pos()))
					return true
				}
				file, _ := strconv.Unquote(lit.Value)
				made = append(made, file)
			}
			return true
		})
	}
	var listed []string
	prelude := false
	for _, s := range allScripts {
		listed = append(listed, s.file)
		prelude = prelude || s.prelude > 0
	}
	if prelude {
		made = append(made, "prelude.lua")
		listed = append(listed, "prelude.lua")
	}
	slices.Sort(made)
	slices.Sort(listed)
	if !slices.Equal(files, made) {
		t.Errorf("lua/ holds %v, the scripts are made of %v", files, made)
	}
	if !slices.Equal(listed, made) {
		t.Errorf("allScripts are made of %v, the package's scripts of %v", listed, made)
	}
}

// header is what a file's top comment says the script takes: its KEYS, then its ARGV,
// fixed ones and then, if any, a group of stride values repeated any number of times.
type header struct {
	keys, args, stride int
}

var (
	headerKeys = regexp.MustCompile(`^-- KEYS\[(\d+)(?:\.\.(\d+))?\]`)
	headerArgs = regexp.MustCompile(`^-- ARGV\[(\d+)(?:\.\.(\d+)|\+(\d*)k)?\]`)
	headerNone = regexp.MustCompile(`^-- (KEYS|ARGV)\s+none\b`)
)

// parseHeader reads the top comment of a file of lua/ (its leading lines that start
// with "--"): lines "-- KEYS[i]", "-- KEYS[i..j]", "-- ARGV[i]", "-- ARGV[i..j]",
// "-- ARGV[i+sk]" (the i-th value of a group of s repeated for k = 0, 1, ...; "i+k"
// for s = 1),
// "-- KEYS none", "-- ARGV none ...", and one starting "-- Returns".
func parseHeader(src string) (header, error) {
	var h header
	keys, args, group := map[int]bool{}, map[int]bool{}, map[int]bool{}
	saidKeys, saidArgs, returns := false, false, false
	sc := bufio.NewScanner(strings.NewReader(src))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "--") {
			break
		}
		returns = returns || strings.HasPrefix(line, "-- Returns")
		if (strings.HasPrefix(line, "-- KEYS[") && !headerKeys.MatchString(line)) ||
			(strings.HasPrefix(line, "-- ARGV[") && !headerArgs.MatchString(line)) {
			return h, fmt.Errorf("cannot read %q", line)
		}
		if m := headerNone.FindStringSubmatch(line); m != nil {
			saidKeys, saidArgs = saidKeys || m[1] == "KEYS", saidArgs || m[1] == "ARGV"
		}
		if m := headerKeys.FindStringSubmatch(line); m != nil {
			saidKeys = true
			from, _ := strconv.Atoi(m[1])
			to := from
			if m[2] != "" {
				to, _ = strconv.Atoi(m[2])
			}
			for i := from; i <= to; i++ {
				keys[i] = true
			}
		}
		if m := headerArgs.FindStringSubmatch(line); m != nil {
			saidArgs = true
			from, _ := strconv.Atoi(m[1])
			to := from
			switch {
			case m[2] != "":
				to, _ = strconv.Atoi(m[2])
			case strings.HasSuffix(m[0], "k]"):
				stride := 1
				if m[3] != "" {
					stride, _ = strconv.Atoi(m[3])
				}
				if h.stride != 0 && h.stride != stride {
					return h, fmt.Errorf("ARGV groups of %d and of %d values", h.stride, stride)
				}
				h.stride = stride
				group[from] = true
				continue
			}
			for i := from; i <= to; i++ {
				args[i] = true
			}
		}
	}
	if !saidKeys || !saidArgs || !returns {
		return h, fmt.Errorf("the top comment must say KEYS, ARGV and Returns (KEYS %v, ARGV %v, Returns %v)", saidKeys, saidArgs, returns)
	}
	h.keys, h.args = len(keys), len(args)
	for i := 1; i <= h.keys; i++ {
		if !keys[i] {
			return h, fmt.Errorf("KEYS[%d] is not documented, KEYS up to %d are", i, h.keys)
		}
	}
	for i := 1; i <= h.args; i++ {
		if !args[i] {
			return h, fmt.Errorf("ARGV[%d] is not documented, %d fixed ARGV are", i, h.args)
		}
	}
	for i := h.args + 1; i <= h.args+h.stride; i++ {
		if !group[i] || len(group) != h.stride {
			return h, fmt.Errorf("the repeated ARGV must be ARGV[%d+%dk] to ARGV[%d+%dk]", h.args+1, h.stride, h.args+h.stride, h.stride)
		}
	}
	return h, nil
}

// fits reports whether a call with keys and args values is one the header allows.
func (h header) fits(keys, args int) bool {
	if keys != h.keys || args < h.args {
		return false
	}
	if h.stride == 0 {
		return args == h.args
	}
	return (args-h.args)%h.stride == 0
}

// scriptCalls records, off the wire, the KEYS and ARGV counts of every script call.
type scriptCalls struct {
	mu    sync.Mutex
	calls map[string][][2]int // sha -> {keys, args} of each call
}

func (c *scriptCalls) note(cmd redis.Cmder) {
	a := cmd.Args()
	if len(a) < 3 {
		return
	}
	name, _ := a[0].(string)
	script, _ := a[1].(string)
	var numkeys int
	switch n := a[2].(type) {
	case int:
		numkeys = n
	case int64:
		numkeys = int(n)
	case string:
		numkeys, _ = strconv.Atoi(n)
	}
	switch strings.ToLower(name) {
	case "evalsha", "evalsha_ro":
	case "eval", "eval_ro":
		sum := sha1.Sum([]byte(script))
		script = hex.EncodeToString(sum[:])
	default:
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[script] = append(c.calls[script], [2]int{numkeys, len(a) - 3 - numkeys})
}

func (c *scriptCalls) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *scriptCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.note(cmd)
		return next(ctx, cmd)
	}
}

func (c *scriptCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.note(cmd)
		}
		return next(ctx, cmds)
	}
}

// Every script is called with as many KEYS and ARGV as its file's top comment says,
// the deadline prelude.lua documents included: the store's every method is run on a
// real Redis and each script call's counts are read off the wire.
func TestScriptCallsMatchHeaders(t *testing.T) {
	prelude, err := parseHeader(luaFile("prelude.lua"))
	if err != nil {
		t.Fatalf("prelude.lua: %v", err)
	}
	want := map[string]*luaScript{}
	headers := map[*luaScript]header{}
	for _, s := range allScripts {
		h, err := parseHeader(luaFile(s.file))
		if err != nil {
			t.Errorf("%s: %v", s.file, err)
			continue
		}
		if s.prelude > 0 {
			h.args += prelude.args // the deadline, which the prelude takes off
		}
		headers[s] = h
		want[s.Hash()] = s
	}
	if t.Failed() {
		return
	}

	srv := testredis.Start(t)
	mod := provision(t, &Redis{URL: "redis://" + srv.Addr, Timeout: caddy.Duration(5 * time.Second)})
	s := open(t, mod)
	calls := &scriptCalls{calls: map[string][][2]int{}}
	s.shared.client.AddHook(calls)
	drive(t, s)

	calls.mu.Lock()
	defer calls.mu.Unlock()
	for sha := range calls.calls {
		if want[sha] == nil {
			t.Errorf("a script call of %s, which is none of allScripts", sha)
		}
	}
	for _, sc := range allScripts {
		h := headers[sc]
		got := calls.calls[sc.Hash()]
		if len(got) == 0 {
			t.Errorf("%s: never called", sc.file)
		}
		for _, c := range got {
			if !h.fits(c[0], c[1]) {
				t.Errorf("%s: called with %d KEYS and %d ARGV; its header says %d KEYS, %d ARGV then groups of %d",
					sc.file, c[0], c[1], h.keys, h.args, h.stride)
			}
		}
	}
}

// drive calls every method of the store, so every script, with more than one visitor
// where a method takes many.
func drive(t *testing.T, s *roomStore) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	lim := queue.Limits{Capacity: 2, SessionTTL: time.Hour, QueueTTL: time.Hour, AwayTTL: time.Hour,
		SessionMax: time.Hour, Rate: 100, RatePer: time.Second}
	check := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	ids := make([]queue.VisitorID, 8)
	var wg sync.WaitGroup
	for i := range ids {
		ids[i] = queue.NewVisitorID()
		wg.Go(func() {
			if _, err := s.Join(ctx, ids[i], now, lim); err != nil {
				t.Errorf("Join: %v", err)
			}
		})
	}
	wg.Wait()
	_, _, err := s.JoinPass(ctx, queue.NewVisitorID(), queue.PassUse{ID: "p", Uses: 2, Expires: now.Add(time.Hour)}, now, lim)
	check("JoinPass", err)
	_, err = s.Status(ctx, ids[0], now)
	check("Status", err)
	_, err = s.Touch(ctx, ids[0], now)
	check("Touch", err)
	_, _, err = s.Move(ctx, ids[2], queue.NewVisitorID(), now, lim)
	check("Move", err)
	check("Heartbeat", s.Heartbeat(ctx, ids, now))
	check("Hold", s.Hold(ctx, ids, now))
	check("Release", s.Release(ctx, ids, now))
	_, err = s.Leave(ctx, ids[1])
	check("Leave", err)
	_, err = s.Step(ctx, now, lim)
	check("Step", err)
	_, err = s.AdmitNow(ctx, 1, now, lim)
	check("AdmitNow", err)
	_, err = s.Shuffle(ctx, "event")
	check("Shuffle", err)
	check("Positions", s.Positions(ctx, []uint64{1, 2}, make([]int, 2)))
	_, err = s.Stats(ctx)
	check("Stats", err)
	_, err = s.SwapOverrides(ctx, nil, []byte(`{"capacity":3}`))
	check("SwapOverrides", err)
	_, err = s.Once(ctx, "proof", now.Add(time.Minute))
	check("Once", err)
	check("Report", s.Report(ctx, 1, queue.Sample{Latency: []uint64{0, 2, 1}, Failed: 1}))
	_, err = s.Measured(ctx, 1)
	check("Measured", err)
	_, err = s.Fleet(ctx, queue.FormatLevel, now, queue.FleetWindows{Record: 15 * time.Second, Lease: time.Minute})
	check("Fleet", err)
	lim.Reasons = true
	rec, err := s.CommitDraw(ctx, queue.DrawRecord{ID: "random-1", Committed: now, PublicKey: "k"})
	check("CommitDraw", err)
	present, err := s.Present(ctx, nil)
	check("Present", err)
	lim.Random, lim.Picks = true, &queue.Picks{Draw: rec.ID, Tickets: present}
	_, err = s.Step(ctx, now, lim)
	check("Step with picks", err)
	_, err = s.CloseDraw(ctx, rec.ID)
	check("CloseDraw", err)
	_, err = s.CommitDraw(ctx, queue.DrawRecord{ID: "event-1", Lottery: "1", Committed: now, PublicKey: "k"})
	check("CommitDraw", err)
	rec, err = s.CloseDraw(ctx, "event-1")
	check("CloseDraw", err)
	entrants, err := s.DrawEntrants(ctx, rec.ID, nil)
	check("DrawEntrants", err)
	_, err = s.PlaceDraw(ctx, rec.ID, 0, entrants)
	check("PlaceDraw", err)
	_, err = s.Admissions(ctx, now.Add(-time.Hour), now)
	check("Admissions", err)
	check("Reset", s.Reset(ctx))
}
