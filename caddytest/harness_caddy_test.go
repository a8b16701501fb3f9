package caddytest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"
)

// The in-process Caddy: Caddy's own caddytest harness runs one Caddy inside the test
// binary, on a fixed admin port (2999) and fixed site ports, so the tests that use it
// run one at a time. Here are its configs (a room in front of a tiny upstream, a site
// of the test's making, the documented dashboard proxy) and the calls that load them.

// The in-process Caddy of the caddytest harness serves the live tests, one at a time.
const (
	livePort = 9080
	liveBase = "http://localhost:9080"
)

var roomSeq atomic.Int64

// uniqueRoom names a room no other test uses: the memory store keeps a room's state
// across config loads by name, which is the point of one test and a leak in the others.
func uniqueRoom(t *testing.T) string {
	return fmt.Sprintf("room%d_%d", time.Now().UnixNano()%1e6, roomSeq.Add(1))
}

// liveGlobals opens the global options block of every in-process test config (the
// harness's fixed admin port, our ports, no trust store, instant shutdown, and Caddy's
// own log kept to errors unless extra says otherwise); extra global options and the
// closing brace follow.
func liveGlobals(extra string) string {
	if !strings.Contains(extra, "\tlog {") {
		// Caddy logs every config load and admin request at info: over a run of the
		// package that is thousands of lines, and the failures CI shows at the end of
		// its output would be buried under them.
		extra = "\tlog {\n\t\tlevel ERROR\n\t}\n" + extra
	}
	return fmt.Sprintf("{\n\tadmin localhost:2999\n\thttp_port %d\n\thttps_port 9443\n\tgrace_period 1ns\n\tskip_install_trust\n\tlocal_certs\n%s}\n", livePort, extra)
}

// liveConfig is a site with a waiting room in front of a tiny upstream: GET /checkout
// answers with the revoke command, anything else echoes its path.
func liveConfig(room string, options string) string {
	return liveGlobals("") + fmt.Sprintf(`
http://localhost:%d {
	waiting_room {
		name %s
		%s
	}
	handle /checkout {
		header Waiting-Room-Command revoke
		respond "order placed"
	}
	respond "upstream {path}"
}
`, livePort, room, options)
}

func startLive(t *testing.T, room, options string) *caddytest.Tester {
	t.Helper()
	tester := caddytest.NewTester(t)
	tester.InitServer(liveConfig(room, options), "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	return tester
}

// liveSiteConfig is liveConfig's global options with a site of the test's own making, and
// 127.0.0.1 trusted as a load balancer: the test plays the balancer and says who the
// client is in X-Forwarded-For, which is how most sites in front of a sale see visitors.
func liveSiteConfig(site string) string {
	return liveGlobals("\tservers {\n\t\ttrusted_proxies static 127.0.0.1/32 ::1/128\n\t}\n") + fmt.Sprintf(`
http://localhost:%d {
%s
}
`, livePort, site)
}

func startSite(t *testing.T, site string) {
	t.Helper()
	caddytest.NewTester(t).InitServer(liveSiteConfig(site), "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
}

// dashboardProxy is the documented way to reach the dashboard from a browser, read
// from Caddyfile.example itself so the tests hold what operators copy: the global
// admin block (with the proxy's origin) and the proxy's site block, moved onto the
// harness's admin port (2999) and the tests' proxy port (9081).
type dashboardProxy struct {
	admin string // the admin global option, with its block
	site  string // the proxy's site block
}

func documentedDashboardProxy(t *testing.T) dashboardProxy {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "Caddyfile.example"))
	if err != nil {
		t.Fatal(err)
	}
	example := string(raw)
	admin := between(t, example, "\tadmin localhost:2019 {\n", "\n\t}\n")
	site := between(t, example, "http://localhost:8081 {\n", "\n}\n")
	move := strings.NewReplacer("2019", "2999", "8081", "9081")
	return dashboardProxy{admin: move.Replace(admin), site: move.Replace(site)}
}

// between returns the part of s from the first start to the next end after it, both
// included.
func between(t *testing.T, s, start, end string) string {
	t.Helper()
	i := strings.Index(s, start)
	if i < 0 {
		t.Fatalf("Caddyfile.example has no %q", start)
	}
	j := strings.Index(s[i:], end)
	if j < 0 {
		t.Fatalf("Caddyfile.example has no %q after %q", end, start)
	}
	return s[i : i+j+len(end)]
}

// globals is liveGlobals with the documented admin block in place of the harness's
// bare admin address.
func (p dashboardProxy) globals(t *testing.T, extra string) string {
	t.Helper()
	g := liveGlobals(extra)
	const bare = "\tadmin localhost:2999\n"
	if !strings.Contains(g, bare) {
		t.Fatalf("liveGlobals has no %q to replace", bare)
	}
	return strings.Replace(g, bare, p.admin, 1)
}

// startSiteWithConsole starts the in-process Caddy with the documented dashboard proxy
// and site, a Caddyfile site block for the live port written by the test.
func startSiteWithConsole(t *testing.T, site string) {
	t.Helper()
	proxy := documentedDashboardProxy(t)
	caddytest.NewTester(t).InitServer(proxy.globals(t, "")+site+"\n"+proxy.site, "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
}
