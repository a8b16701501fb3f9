package caddytest

import (
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/caddyserver/caddy/v2/caddytest"
)

// Behind a balancer that appends the client's address to X-Forwarded-For, a client can
// put a forged address of its own choosing before it. Without trusted_proxies_strict
// Caddy takes the leftmost address, the forged one, so every request is a new address
// and the per-address cap counts nothing: 8 of 8 joins pass a cap of 3. With
// trusted_proxies_strict Caddy reads the header from the right and stops at the first
// address it does not trust, the one the balancer appended: 3 of 8 pass.
func TestLivePerIPCapsWithForgedForwardedFor(t *testing.T) {
	for _, tc := range []struct {
		name   string
		strict string
		passed int
	}{
		{"leftmost (not strict): bypassed", "", 8},
		{"trusted_proxies_strict: held", "\t\ttrusted_proxies_strict\n", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tester := caddytest.NewTester(t)
			tester.InitServer(liveGlobals("\tservers {\n\t\ttrusted_proxies static 127.0.0.0/8\n"+tc.strict+"\t}\n")+fmt.Sprintf(`
http://localhost:%d {
	waiting_room {
		name %s
		capacity 1
		max_joins_per_ip 3 1m
	}
	respond "upstream {path}"
}
`, livePort, uniqueRoom(t)), "caddyfile")
			passed, refused := 0, 0
			for i := range 8 {
				// The client forged the first address; the balancer (this test, on
				// 127.0.0.1) appended the one it saw, always the same.
				req, _ := http.NewRequest(http.MethodGet, liveBase+"/", nil)
				req.Header.Set("Accept", "application/json")
				req.Header.Set("X-Forwarded-For", fmt.Sprintf("198.51.100.%d, 203.0.113.7", i+1))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusOK:
					passed++
				case http.StatusTooManyRequests:
					refused++
				default:
					t.Fatalf("join %d: %d", i+1, resp.StatusCode)
				}
			}
			if passed != tc.passed || refused != 8-tc.passed {
				t.Fatalf("8 joins from one client forging its leftmost X-Forwarded-For: %d passed, %d refused, want %d and %d",
					passed, refused, tc.passed, 8-tc.passed)
			}
		})
	}
}
