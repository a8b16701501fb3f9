package caddytest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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

// The admin API page shows the same proxy as Caddyfile.example, which the browser
// tests run.
func TestDashboardProxyDocumentedAlike(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "Caddyfile.example"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "admin-api.md"))
	if err != nil {
		t.Fatal(err)
	}
	example := string(raw)
	for _, block := range []string{
		between(t, example, "\tadmin localhost:2019 {\n", "\n\t}\n"),
		between(t, example, "http://localhost:8081 {\n", "\n}\n"),
	} {
		if !strings.Contains(string(doc), block) {
			t.Errorf("docs/admin-api.md does not show Caddyfile.example's\n%s", block)
		}
	}
	if strings.Contains(example, "header_up Origin") {
		t.Error("the documented proxy rewrites Origin, which lets any web page drive the admin API")
	}
}
