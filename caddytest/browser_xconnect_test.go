package caddytest

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// xconnect is the GODEBUG setting with which Go's HTTP/2 servers (net/http's and
// golang.org/x/net/http2's, which Caddy uses) offer extended CONNECT (RFC 8441), and
// browsers then open their WebSockets on the HTTP/2 connection.
const xconnect = "http2xconnect=1"

// With extended CONNECT offered, the waiting page's socket is a CONNECT on an HTTP/2
// stream, and the room serves it like an HTTP/1.1 upgrade: the page's numbers come
// over it, not from its fallback polls. Over HTTPS (HTTP/2 needs TLS), in every engine.
func TestEnginesSocketOverHTTP2(t *testing.T) {
	if !strings.Contains(os.Getenv("GODEBUG"), xconnect) {
		// Both servers read the setting once, as their packages load: the test runs
		// again in a process started with it.
		self, err := os.Executable() // not os.Args[0], which Caddy's tests may rewrite
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(self, "-test.run=^TestEnginesSocketOverHTTP2$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "GODEBUG="+strings.Trim(os.Getenv("GODEBUG")+","+xconnect, ","))
		out, err := cmd.CombinedOutput()
		var lines []string
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if !strings.HasPrefix(sc.Text(), `{"level"`) { // Caddy's own log
				lines = append(lines, sc.Text())
			}
		}
		t.Logf("the test with GODEBUG=%s:\n%s", xconnect, strings.Join(lines, "\n"))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range engines {
			if !bytes.Contains(out, []byte("--- PASS: TestEnginesSocketOverHTTP2/"+e.name)) {
				t.Errorf("%s did not pass (or was skipped) with extended CONNECT on", e.name)
			}
		}
		return
	}
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			p := e.start(t, engineOptions{})
			up, reports := startEngineSite(t, uniqueRoom(t), "capacity 1")
			buyer := newVisitor(t)
			if _, in := buyer.place("/"); !in {
				t.Fatal("the first visitor was queued")
			}
			var waiters []*visitor
			for range 4 {
				v := newVisitor(t)
				v.place("/")
				waiters = append(waiters, v)
			}
			const uri = "/shows/3"
			p.navigate(liveTLSBase + uri)
			engineShowing(t, p, "wr-position", "5")
			proto := engineEval[string](t, p, `performance.getEntriesByType("navigation")[0].nextHopProtocol`)
			before := engineEval[int](t, p, pagePolls)
			for i, v := range waiters {
				v.leave()
				engineShowing(t, p, "wr-position", strconv.Itoa(4-i))
			}
			after := engineEval[int](t, p, pagePolls)
			t.Logf("%s: page over %s; %d JSON polls before, %d after four moves", p.name(), proto, before, after)
			if proto != "h2" {
				t.Errorf("%s loaded the page over %q, not HTTP/2", p.name(), proto)
			}
			// Polling, each move would wait for a poll (one every few seconds): the
			// socket told all four.
			if after-before > 1 {
				t.Errorf("%s: %d polls during four moves: the socket did not carry them", p.name(), after-before)
			}
			buyer.get("/checkout", "")
			engineLandedOn(t, p, liveTLSBase, uri)
			if got := up.requests(uri); len(got) != 1 {
				t.Errorf("the upstream saw %q", got)
			}
			if got := p.problems(); len(got) > 0 {
				t.Errorf("%s reported errors:\n\t%s", p.name(), strings.Join(got, "\n\t"))
			}
			if got := reports.all(); len(got) > 0 {
				t.Errorf("%s reported CSP violations:\n\t%s", p.name(), strings.Join(got, "\n\t"))
			}
		})
	}
}
