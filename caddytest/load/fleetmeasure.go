package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// What the ws section reads off a fleet of instances and their Redis.

// fleetRSS is the sum of the instances' resident memory.
func fleetRSS(ins []*instance) (int64, error) {
	var sum int64
	for _, in := range ins {
		rss, err := in.rssBytes()
		if err != nil {
			return 0, fmt.Errorf("%s: %w", in.name, err)
		}
		sum += rss
	}
	return sum, nil
}

// goMemory is what the Go runtimes of a fleet hold, from each admin endpoint's
// /metrics: heap in use, goroutine stacks in use, and goroutines.
type goMemory struct {
	heap, stacks, goroutines float64
}

// fleetGoMemory sums goMemory over the instances; with collect, each runs a garbage
// collection first (the heap profile's gc=1), so heap is what is live, not what the
// collector has yet to reclaim.
func fleetGoMemory(ctx context.Context, ins []*instance, collect bool) (goMemory, error) {
	var sum goMemory
	for _, in := range ins {
		if collect {
			if err := drain(ctx, in.admin+"/debug/pprof/heap?gc=1"); err != nil {
				return sum, fmt.Errorf("%s: %w", in.name, err)
			}
		}
		m, err := scrape(ctx, in.admin+"/metrics",
			"go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes", "go_goroutines")
		if err != nil {
			return sum, fmt.Errorf("%s: %w", in.name, err)
		}
		sum.heap += m[0]
		sum.stacks += m[1]
		sum.goroutines += m[2]
	}
	return sum, nil
}

func fetch(ctx context.Context, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	return resp, nil
}

func drain(ctx context.Context, url string) error {
	resp, err := fetch(ctx, url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// scrape reads the named unlabelled metrics from a Prometheus text page, in order.
func scrape(ctx context.Context, url string, names ...string) ([]float64, error) {
	resp, err := fetch(ctx, url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	values := make([]float64, len(names))
	found := make([]bool, len(names))
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		for i, n := range names {
			if name == n {
				values[i], err = strconv.ParseFloat(value, 64)
				if err != nil {
					return nil, fmt.Errorf("%s: %s: %w", url, n, err)
				}
				found[i] = true
			}
		}
	}
	for i, ok := range found {
		if !ok {
			return nil, fmt.Errorf("%s: no %s", url, names[i])
		}
	}
	return values, sc.Err()
}

// redisCalls is INFO commandstats as calls per command (lower case, "evalsha",
// "bitpos", …); commands run inside scripts count under their own names too.
func redisCalls(ctx context.Context, s *redisServer) (map[string]int64, error) {
	info, err := s.client.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	calls := map[string]int64{}
	for line := range strings.SplitSeq(info, "\r\n") {
		name, rest, ok := strings.Cut(line, ":calls=")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("commandstats %q: %w", line, err)
		}
		calls[strings.TrimPrefix(name, "cmdstat_")] = n
	}
	return calls, nil
}

// cpuSeconds is the CPU time the process has used so far (user and system), from
// /proc: where a shared machine's cores went during a window.
func (p *proc) cpuSeconds() (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; the fields after it are plain.
	_, rest, ok := strings.Cut(string(b), ") ")
	fields := strings.Fields(rest)
	if !ok || len(fields) < 13 {
		return 0, fmt.Errorf("unexpected /proc stat %q", b)
	}
	var ticks float64
	for _, f := range fields[11:13] { // utime and stime: fields 14 and 15 of the line
		n, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return ticks / clockTicks, nil
}

// clockTicks is USER_HZ, the unit of /proc's CPU times: 100 on every Linux we run on.
const clockTicks = 100

// machineBusy is the CPU time every core of the machine has spent not idle, from
// /proc/stat's cpu line.
func machineBusy() (float64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) < 8 || fields[0] != "cpu" {
		return 0, fmt.Errorf("unexpected /proc/stat line %q", line)
	}
	var busy float64
	for i, f := range fields[1:8] { // user nice system idle iowait irq softirq
		n, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return 0, err
		}
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy / clockTicks, nil
}

// cpuMeter measures the cores groups of processes used over a window, and what the
// rest of the machine (the harness, and on a shared machine its neighbours) used.
type cpuMeter struct {
	start  time.Time
	groups map[string][]*proc
	before map[string]float64
	busy   float64
}

// othersGroup is the cores the machine spent outside the metered groups.
const othersGroup = "others"

func startCPUMeter(groups map[string][]*proc) (*cpuMeter, error) {
	busy, err := machineBusy()
	if err != nil {
		return nil, err
	}
	m := &cpuMeter{start: time.Now(), groups: groups, before: map[string]float64{}, busy: busy}
	for name, procs := range groups {
		for _, p := range procs {
			s, err := p.cpuSeconds()
			if err != nil {
				return nil, err
			}
			m.before[name] += s
		}
	}
	return m, nil
}

// cores returns each group's average cores over the window so far, and the others'.
func (m *cpuMeter) cores() (map[string]float64, error) {
	wall := time.Since(m.start).Seconds()
	busy, err := machineBusy()
	if err != nil {
		return nil, err
	}
	out := map[string]float64{othersGroup: (busy - m.busy) / wall}
	for name, procs := range m.groups {
		var s float64
		for _, p := range procs {
			v, err := p.cpuSeconds()
			if err != nil {
				return nil, err
			}
			s += v
		}
		out[name] = (s - m.before[name]) / wall
		out[othersGroup] -= out[name]
	}
	out[othersGroup] = max(out[othersGroup], 0)
	return out, nil
}
