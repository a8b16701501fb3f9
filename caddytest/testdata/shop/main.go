// Command shop is the adaptive capacity tests' shop: an upstream that serves a
// limited number of requests at once, each in a fixed service time, the rest waiting
// their turn (so its latency grows once more than the limit are in), as a shop
// behind a database pool does. POST /control changes, while it runs, how many it
// serves at once (limit) and what share of requests it fails with a 503 (fail).
//
//	shop -addr 127.0.0.1:9000 -limit 8 -service 100ms
//
// A path ending in /done is the checkout: it answers with the room's revoke
// command, ending the visitor's session. A path ending in /fast is a cheap page,
// answered at once; one ending in /slow takes ?ms= milliseconds; neither waits for
// the limit. Every request's body is read whole before it is answered, as a form
// handler does. Every answer echoes the X-Capacity request header, which the tests'
// Caddy sets from {http.waiting_room.capacity}.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// gate lets limit requests in at once; the others wait in arrival order.
type gate struct {
	mu      sync.Mutex
	limit   int
	in      int
	waiting []chan struct{}
	fail    float64
}

func (g *gate) enter() {
	g.mu.Lock()
	if g.in < g.limit {
		g.in++
		g.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	g.waiting = append(g.waiting, ch)
	g.mu.Unlock()
	<-ch // leave hands over its place
}

func (g *gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.in--
	g.admit()
}

// admit lets waiters in while the limit allows; under g.mu.
func (g *gate) admit() {
	for g.in < g.limit && len(g.waiting) > 0 {
		ch := g.waiting[0]
		g.waiting = g.waiting[1:]
		g.in++
		close(ch)
	}
}

func (g *gate) set(limit int, fail float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if limit > 0 {
		g.limit = limit
	}
	if fail >= 0 {
		g.fail = fail
	}
	g.admit()
}

func (g *gate) failing() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.fail > 0 && rand.Float64() < g.fail
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	limit := flag.Int("limit", 8, "requests served at once")
	service := flag.Duration("service", 100*time.Millisecond, "time to serve one request")
	flag.Parse()
	g := &gate{limit: *limit}

	http.HandleFunc("POST /control", func(w http.ResponseWriter, r *http.Request) {
		n, fail := -1, -1.0
		if v := r.FormValue("limit"); v != "" {
			var err error
			if n, err = strconv.Atoi(v); err != nil || n < 1 {
				http.Error(w, "limit must be a whole number of at least 1", http.StatusBadRequest)
				return
			}
		}
		if v := r.FormValue("fail"); v != "" {
			var err error
			if fail, err = strconv.ParseFloat(v, 64); err != nil || fail < 0 || fail > 1 {
				http.Error(w, "fail must be a share from 0 to 1", http.StatusBadRequest)
				return
			}
		}
		g.set(n, fail)
		fmt.Fprintln(w, "ok")
	})
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, "bad request body", http.StatusBadRequest)
			return
		}
		w.Header().Set("X-Capacity", r.Header.Get("X-Capacity"))
		switch {
		case strings.HasSuffix(r.URL.Path, "/fast"):
			fmt.Fprintln(w, "item", r.URL.Path)
			return
		case strings.HasSuffix(r.URL.Path, "/slow"):
			ms, _ := strconv.Atoi(r.URL.Query().Get("ms"))
			time.Sleep(time.Duration(ms) * time.Millisecond)
			fmt.Fprintln(w, "item", r.URL.Path)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/done") {
			w.Header().Set("Waiting-Room-Command", "revoke")
			fmt.Fprintln(w, "thank you")
			return
		}
		g.enter()
		time.Sleep(*service)
		g.leave()
		if g.failing() {
			http.Error(w, "the shop failed", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "item", r.URL.Path)
	})
	srv := &http.Server{Addr: *addr}
	log.Fatal(srv.ListenAndServe())
}
