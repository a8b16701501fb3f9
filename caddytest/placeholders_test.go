package caddytest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// upstreamSeen is what a real upstream behind reverse_proxy received.
type upstreamSeen struct {
	mu       sync.Mutex
	requests []http.Header
}

func (u *upstreamSeen) last() http.Header {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.requests[len(u.requests)-1]
}

// The README's reverse_proxy: the shop behind the room is told who came in and how
// long they waited, and the access log says what the room decided. A visitor admitted
// at once waited 0; a visitor who waited in line is told the wait the test made them
// wait (to the second), and the access log of their queued requests names the same
// visitor id the upstream gets.
func TestLivePlaceholdersReachUpstreamAndAccessLog(t *testing.T) {
	seen := &upstreamSeen{}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.mu.Lock()
		seen.requests = append(seen.requests, r.Header.Clone())
		seen.mu.Unlock()
		if r.URL.Path == "/checkout" {
			w.Header().Set("Waiting-Room-Command", "revoke")
		}
		fmt.Fprintf(w, "upstream %s", r.URL.Path)
	}))
	defer upstream.Close()
	logFile := filepath.Join(t.TempDir(), "access.log")
	room := uniqueRoom(t)
	startSite(t, fmt.Sprintf(`	log {
		output file %s
		format json
	}
	log_append wr_status {http.waiting_room.status}
	log_append wr_visitor {http.waiting_room.visitor}
	waiting_room {
		name %s
		capacity 1
	}
	reverse_proxy %s {
		header_up X-Visitor {http.waiting_room.visitor}
		header_up X-Waited {http.waiting_room.waited_seconds}
		header_up X-Room-Status {http.waiting_room.status}
	}`, logFile, room, strings.TrimPrefix(upstream.URL, "http://")))

	first := newVisitor(t)
	if _, admitted := first.place("/"); !admitted {
		t.Fatal("the first visitor was queued in an empty room")
	}
	h := seen.last()
	firstID := h.Get("X-Visitor")
	if len(firstID) != 32 || h.Get("X-Waited") != "0" || h.Get("X-Room-Status") != "admitted" {
		t.Fatalf("admitted at join, the upstream got X-Visitor %q, X-Waited %q, X-Room-Status %q",
			firstID, h.Get("X-Waited"), h.Get("X-Room-Status"))
	}

	waiter := newVisitor(t)
	joined := time.Now()
	if q, admitted := waiter.place("/"); admitted || q.Position != 1 {
		t.Fatalf("the second visitor: admitted %v, %+v", admitted, q)
	}
	time.Sleep(2 * time.Second) // the wait the upstream must be told (not a bound on anything)
	first.get("/checkout", "")  // the upstream revokes the first session: the waiter is next
	var admittedAt time.Time
	for polls := 0; ; polls++ {
		if _, admitted := waiter.place("/"); admitted {
			admittedAt = time.Now()
			break
		}
		if polls == 200 {
			t.Fatal("the waiter was not admitted after the slot was freed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	h = seen.last()
	waitedMin := math.Floor(admittedAt.Sub(joined).Seconds()) - 1 // whole seconds, either side of the test's view
	waitedMax := math.Ceil(admittedAt.Sub(joined).Seconds()) + 1
	waited, err := strconv.Atoi(h.Get("X-Waited"))
	if err != nil || float64(waited) < waitedMin || float64(waited) > waitedMax || waited < 1 {
		t.Fatalf("the waiter waited %v; the upstream was told X-Waited %q", admittedAt.Sub(joined), h.Get("X-Waited"))
	}
	waiterID := h.Get("X-Visitor")
	if len(waiterID) != 32 || waiterID == firstID || h.Get("X-Room-Status") != "admitted" {
		t.Fatalf("the waiter's admitted request: X-Visitor %q (first %q), X-Room-Status %q", waiterID, firstID, h.Get("X-Room-Status"))
	}
	// A later request of the session tells the same wait: the cookie carries it.
	if _, admitted := waiter.place("/"); !admitted {
		t.Fatal("the admitted waiter's next request did not reach the upstream")
	}
	if later := seen.last(); later.Get("X-Waited") != h.Get("X-Waited") || later.Get("X-Visitor") != waiterID {
		t.Fatalf("a later request of the waiter's session: X-Waited %q, X-Visitor %q; want %q, %q",
			later.Get("X-Waited"), later.Get("X-Visitor"), h.Get("X-Waited"), waiterID)
	}

	// The access log: the waiter's queued answers name the id the upstream got later.
	statuses := map[string]int{}
	deadline := time.Now().Add(10 * time.Second)
	for statuses["queued "+waiterID] == 0 || statuses["admitted "+waiterID] == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the access log lacks the waiter's queued and admitted requests: %v", statuses)
		}
		time.Sleep(100 * time.Millisecond)
		statuses = readAccessLog(t, logFile)
	}
	if statuses["admitted "+firstID] == 0 {
		t.Fatalf("the access log lacks the first visitor's admitted request: %v", statuses)
	}
}

// readAccessLog counts the access log's entries by "<wr_status> <wr_visitor>".
func readAccessLog(t *testing.T, path string) map[string]int {
	f, err := os.Open(path)
	if err != nil {
		return nil // not written yet
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e struct {
			Status  string `json:"wr_status"`
			Visitor string `json:"wr_visitor"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("access log line %q: %v", sc.Text(), err)
		}
		out[e.Status+" "+e.Visitor]++
	}
	return out
}

// The per-IP cap's 429 is a Caddy error: handle_errors restyles it, and the
// Retry-After the room set is kept. The waiting page is an answer, not an error:
// handle_errors leaves it alone.
func TestLiveHandleErrorsRestylesTheTooMany(t *testing.T) {
	room := uniqueRoom(t)
	startSite(t, fmt.Sprintf(`	waiting_room {
		name %s
		capacity 1
		max_joins_per_ip 3 1m
	}
	respond "upstream {path}"
	handle_errors 429 {
		header Content-Type "text/html; charset=utf-8"
		respond "<h1>Slow down</h1><p>{err.status_code}: {err.message}</p>"
	}
	handle_errors {
		respond "other error {err.status_code}"
	}`, room))
	newVisitor(t).place("/") // admitted
	for i := range 2 {
		if _, admitted := newVisitor(t).place("/"); admitted {
			t.Fatalf("visitor %d was admitted into a full room", i+2)
		}
	}
	code, hdr, body := newVisitor(t).get("/", "text/html")
	if code != http.StatusTooManyRequests || hdr.Get("Retry-After") != "60" ||
		!strings.Contains(body, "<h1>Slow down</h1><p>429: too many requests from this address</p>") ||
		!strings.HasPrefix(hdr.Get("Content-Type"), "text/html") {
		t.Fatalf("the fourth new visitor from one address: %d, Retry-After %q, Content-Type %q, body %q",
			code, hdr.Get("Retry-After"), hdr.Get("Content-Type"), short(body))
	}
}
