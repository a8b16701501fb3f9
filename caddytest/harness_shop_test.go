package caddytest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// shopBuild is testdata/shop: an upstream process whose own concurrency limit, and
// share of failures, the test changes while it runs.
var shopBuild = &testBinary{name: "shop", pkg: "./testdata/shop"}

// shopProc is a running shop process.
type shopProc struct {
	t    testing.TB
	addr string
}

// startShop starts a shop serving limit requests at once, each in service; it is
// killed when the test ends.
func startShop(t testing.TB, limit int, service time.Duration) *shopProc {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(freeTCPPort(t))
	cmd := exec.Command(shopBuild.path(t), "-addr", addr, "-limit", strconv.Itoa(limit), "-service", service.String())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	s := &shopProc{t: t, addr: addr}
	waitFor(t, "the shop to listen", func() bool {
		resp, err := http.PostForm("http://"+addr+"/control", url.Values{})
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return s
}

// set changes how many requests the shop serves at once (0 keeps it) and the share
// it fails (negative keeps it).
func (s *shopProc) set(limit int, fail float64) {
	s.t.Helper()
	form := url.Values{}
	if limit > 0 {
		form.Set("limit", strconv.Itoa(limit))
	}
	if fail >= 0 {
		form.Set("fail", strconv.FormatFloat(fail, 'f', -1, 64))
	}
	resp, err := http.PostForm("http://"+s.addr+"/control", form)
	if err != nil {
		s.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("shop control %v: %d", form, resp.StatusCode)
	}
}

// shopRoute is the Caddyfile route that hands the room's paths to the shop, telling
// it the capacity in force.
func (s *shopProc) route(paths string) string {
	return fmt.Sprintf("\thandle %s {\n\t\treverse_proxy %s {\n\t\t\theader_up X-Capacity {http.waiting_room.capacity}\n\t\t}\n\t}\n", paths, s.addr)
}

// shoppers are simulated people who queue for the shop and, once admitted, keep
// making requests (items) and then check out, which ends their session; then the
// next person takes their place in the crowd. Shopper i uses instance i % len.
type shoppers struct {
	items    int
	requests atomic.Int64 // admitted requests answered by the shop
	failed   atomic.Int64 // of those, answered 5xx
	capacity atomic.Int64 // the capacity the last answer carried (X-Capacity)
	errs     failureLog
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// startShoppers runs n shoppers against bases (instances), room path prefix path,
// each making items requests once admitted.
func startShoppers(n, items int, bases []string, path string) *shoppers {
	ctx, cancel := context.WithCancel(context.Background())
	s := &shoppers{items: items, cancel: cancel}
	for i := range n {
		s.wg.Go(func() { s.shop(ctx, bases[i%len(bases)], path) })
	}
	return s
}

func (s *shoppers) stop() { s.cancel(); s.wg.Wait() }

// shop is one place in the crowd: a person after a person.
func (s *shoppers) shop(ctx context.Context, base, path string) {
	for ctx.Err() == nil {
		g := newGuest()
		// In line: ask again as the page's poll would, until admitted.
		for ctx.Err() == nil {
			code, body, err := g.get(base, path+"/item", "application/json")
			if err != nil {
				s.errs.add("in line: %v", err)
				sleepCtx(ctx, time.Second)
				continue
			}
			if strings.HasPrefix(body, "item ") || code >= 500 && !strings.Contains(body, `"status"`) {
				break // the shop answered: admitted
			}
			var q queueAnswer
			if json.Unmarshal([]byte(body), &q) != nil || q.Status != "queued" {
				s.errs.add("in line: %d %q", code, short(body))
			}
			sleepCtx(ctx, 250*time.Millisecond)
		}
		for range s.items {
			if ctx.Err() != nil {
				return
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path+"/item", nil)
			resp, err := g.client.Do(req)
			if err != nil {
				if ctx.Err() == nil {
					s.errs.add("shopping: %v", err)
				}
				continue
			}
			resp.Body.Close()
			if c, err := strconv.Atoi(resp.Header.Get("X-Capacity")); err == nil {
				s.capacity.Store(int64(c))
				s.requests.Add(1)
				if resp.StatusCode >= 500 {
					s.failed.Add(1)
				}
			}
		}
		if _, _, err := g.get(base, path+"/done", ""); err != nil && ctx.Err() == nil {
			s.errs.add("checkout: %v", err)
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// adaptState is the admin room object's capacity and adapt object.
type adaptState struct {
	Capacity int `json:"capacity"`
	Adapt    *struct {
		Latency  string  `json:"latency"`
		P90      *string `json:"p90"`
		Capacity *int    `json:"capacity"`
		Reason   *string `json:"reason"`
		Requests *uint64 `json:"requests"`
	} `json:"adapt"`
}

func (a adaptState) p90() time.Duration {
	if a.Adapt == nil || a.Adapt.P90 == nil {
		return -1
	}
	d, _ := time.ParseDuration(*a.Adapt.P90)
	return d
}

func (a adaptState) reason() string {
	if a.Adapt == nil || a.Adapt.Reason == nil {
		return ""
	}
	return *a.Adapt.Reason
}

// readAdapt GETs room's capacity and adapt object on one instance.
func readAdapt(t testing.TB, nd *node, room string) (adaptState, error) {
	var a adaptState
	resp, err := http.Get(nd.admin + "/waiting_room/" + room)
	if err != nil {
		return a, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return a, fmt.Errorf("GET room on %s: %d", nd.name, resp.StatusCode)
	}
	return a, json.NewDecoder(resp.Body).Decode(&a)
}
