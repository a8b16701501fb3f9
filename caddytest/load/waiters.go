package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The "waiters" client process holds its share of the ws section's waiting WebSockets
// and listens to them. Steered on stdin (see steeredClient):
//
//	grow <n>   connect waiters until it holds n (joins spread round robin over -addrs)
//	mark       start a measuring window
//	report     what every waiter heard since the mark
//
// Its sockets leave from one loopback address of their own (-source), so the process's
// ~17,000 connections do not run out of ephemeral ports, whoever else dials 127.0.0.1.
func init() { clientModes["waiters"] = waitersMain }

// A heldWaiter is what one waiter's socket heard, as its reader notes it.
type heldWaiter struct {
	mu       sync.Mutex
	arrival  silence // by when each message reached the socket (the kernel's receive time)
	read     silence // by when the client process read it
	messages int     // messages inside the window
	// together counts messages inside the window that one read took with a later one
	// of the same socket: the kernel merges what waits unread and dates it all by the
	// latest, so their arrival is known only to be no later than that (see readTogether).
	together int
	admitted bool // told "admitted" (nobody should be in the ws section's window)
	ended    bool // the socket ended: an error, or a close from the server
}

// silence follows one timeline of a waiter's messages: when the last came, and the
// longest gap between two inside the window. The promise is about arrivals: a waiter
// has heard when the message is in its socket. The client process on a busy machine
// reads it later, by a varying amount, and that timeline is kept beside it to show
// how much of what the process saw was its own lateness.
type silence struct {
	last   time.Duration // since the set's start
	maxGap time.Duration
}

func (s *silence) note(at time.Duration) {
	s.maxGap = max(s.maxGap, at-s.last)
	s.last = at
}

// longest is the longest silence until now, the open one at the end included: a
// waiter silent at the end of the window is silent still.
func (s silence) longest(now time.Duration) time.Duration { return max(s.maxGap, now-s.last) }

// waiterSet is one client process's waiters.
type waiterSet struct {
	dialer      *waiterDialer
	addrs       []string
	path        string
	concurrency int
	start       time.Time // arrival times count from here (monotonic)
	listen      func(*heldWaiter, *waiterConn) error

	mu          sync.Mutex
	waiters     []*heldWaiter
	retried     int // WebSocket upgrades tried again, as the page would
	failed      int
	firstError  string
	windowStart time.Duration
}

// growAnswer is the answer to "grow".
type growAnswer struct {
	Connected  int     `json:"connected"`
	Retried    int     `json:"retried"`
	Failed     int     `json:"failed"`
	FirstError string  `json:"first_error,omitempty"`
	Seconds    float64 `json:"seconds"`
}

// waitersReport is the answer to "report": per waiter (in no particular order) what it
// heard during the window, and this process's own aggregates of the same.
type waitersReport struct {
	WindowSeconds float64 `json:"window_seconds"`
	MaxGapMillis  []int   `json:"max_gap_ms"` // the longest silence, the open one at the end included; not of those admitted
	Messages      []int   `json:"messages"`
	Together      int     `json:"read_together"` // messages read with a later one (see heldWaiter.together)
	Ended         []bool  `json:"ended"`         // the socket ended (error or close) at some point
	Admitted      int     `json:"admitted"`

	Within int `json:"within_bound"` // waiters still waiting whose longest silence (arrivals) is within -bound
	P50    int `json:"p50_ms"`
	P99    int `json:"p99_ms"`
	MaxGap int `json:"max_ms"`
	// Each waiter's longest silence as the client process read its messages.
	ReadMaxGapMillis []int `json:"read_max_gap_ms"`
	EndedN           int   `json:"ended_count"` // sockets that ended without an admission
	Waiters          int   `json:"waiters"`
}

func waitersMain(args []string) int {
	fs := flag.NewFlagSet("waiters", flag.ContinueOnError)
	addrs := fs.String("addrs", "", "comma-separated host:port of the Caddy instances")
	path := fs.String("path", "/room", "the room's path")
	source := fs.String("source", "127.0.0.1", "loopback address the sockets leave from")
	concurrency := fs.Int("concurrency", 32, "joins in flight at once")
	ca := fs.String("ca", "", "over TLS: the root certificate (PEM) that signs the instances' certificates; plain HTTP when empty")
	bound := fs.Duration("bound", 2500*time.Millisecond, "the longest silence a waiter may meet and still count as told in time")
	profile := fs.String("cpuprofile", "", "write a CPU profile of each window (mark to report) to this path, with -window<N>.pprof for .pprof")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	s := &waiterSet{
		dialer: &waiterDialer{net: &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(*source)}, Timeout: handshakeTimeout,
			Control: lateBind}},
		addrs:       strings.Split(*addrs, ","),
		path:        *path,
		concurrency: *concurrency,
		start:       time.Now(),
	}
	if *ca != "" {
		cfg, err := loadRoot(*ca)
		if err != nil {
			fmt.Fprintln(os.Stderr, "waiters:", err)
			return 1
		}
		s.dialer.tls = cfg
	}
	if err := s.startListening(); err != nil {
		fmt.Fprintln(os.Stderr, "waiters:", err)
		return 1
	}
	windows := &windowProfile{path: *profile}
	return steerCommands(func(command string) (any, error) {
		verb, arg, _ := strings.Cut(command, " ")
		switch verb {
		case "grow":
			n, err := strconv.Atoi(arg)
			if err != nil {
				return nil, fmt.Errorf("grow %q: %v", arg, err)
			}
			return s.grow(n), nil
		case "mark":
			s.mark()
			return struct{}{}, windows.start()
		case "report":
			rep := s.report(*bound)
			return rep, windows.stop()
		}
		return nil, fmt.Errorf("unknown command %q", command)
	})
}

// grow connects waiters until the set holds n or every attempt is spent; a failed
// waiter is counted, not retried (a figure must show it).
func (s *waiterSet) grow(n int) growAnswer {
	began := time.Now()
	s.mu.Lock()
	first := len(s.waiters) + s.failed
	s.mu.Unlock()
	next := make(chan int)
	var wg sync.WaitGroup
	for range s.concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c, retried, err := s.join(s.addrs[i%len(s.addrs)])
				joined := time.Since(s.start)
				w := &heldWaiter{arrival: silence{last: joined}, read: silence{last: joined}}
				if err == nil {
					err = s.listen(w, c)
				}
				s.mu.Lock()
				s.retried += retried
				if err != nil {
					s.failed++
					if s.firstError == "" {
						s.firstError = err.Error()
					}
					s.mu.Unlock()
					continue
				}
				s.waiters = append(s.waiters, w)
				s.mu.Unlock()
			}
		}()
	}
	for i := first; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return growAnswer{Connected: len(s.waiters), Retried: s.retried, Failed: s.failed, FirstError: s.firstError,
		Seconds: time.Since(began).Seconds()}
}

// Retrying a WebSocket the server did not open, as the waiting page does: its first
// retry comes 2.5 to 5 s later, and a waiter whose socket fails again keeps trying.
const (
	upgradeRetries    = 3
	upgradeRetryDelay = 2500 * time.Millisecond
)

// join joins at addr and opens the waiting WebSocket. When the server queues the
// visitor but does not open its socket (on a saturated machine a store call can time
// out, and the room then does what its failure mode says), it comes back with its
// cookie and tries again, as the page would: the place is kept, and a figure counts
// the retries.
func (s *waiterSet) join(addr string) (c *waiterConn, retried int, err error) {
	c, err = joinAndWait(s.dialer, addr, s.path, "")
	var refused *upgradeError
	for ; errors.As(err, &refused) && retried < upgradeRetries; retried++ {
		time.Sleep(upgradeRetryDelay + rand.N(upgradeRetryDelay))
		c, err = joinAndWait(s.dialer, addr, s.path, refused.cookie)
	}
	return c, retried, err
}

// heard notes a message of kind that reached the socket at arrived and was read at
// read (both since the set's start).
func (w *heldWaiter) heard(arrived, read time.Duration, kind string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.arrival.note(arrived)
	w.read.note(read)
	w.messages++
	w.admitted = w.admitted || kind == msgAdmitted
}

// readTogether notes that n messages were read with a later one, and so are dated by
// its arrival: a client process that fell behind by more than the time between two
// messages makes the silence before them look longer than it was. Counted, so that a
// long silence at the socket can be told from a late reader.
func (w *heldWaiter) readTogether(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.together += n
}

// end notes that the socket ended.
func (w *heldWaiter) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ended = true
}

// mark starts a window: silences are measured from here on (a silence that began
// before the mark counts whole, since the waiter sat through all of it).
func (s *waiterSet) mark() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.windowStart = time.Since(s.start)
	for _, w := range s.waiters {
		w.mu.Lock()
		w.arrival.maxGap, w.read.maxGap, w.messages, w.together = 0, 0, 0, 0
		w.mu.Unlock()
	}
}

func (s *waiterSet) report(bound time.Duration) waitersReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Since(s.start)
	rep := waitersReport{WindowSeconds: (now - s.windowStart).Seconds(), Waiters: len(s.waiters)}
	gaps := make([]int, 0, len(s.waiters))
	for _, w := range s.waiters {
		w.mu.Lock()
		rep.Messages = append(rep.Messages, w.messages)
		rep.Together += w.together
		rep.Ended = append(rep.Ended, w.ended)
		if w.admitted {
			// Done waiting: its socket ends, and its silence after that is nobody's.
			rep.Admitted++
			w.mu.Unlock()
			continue
		}
		gap := w.arrival.longest(now)
		rep.MaxGapMillis = append(rep.MaxGapMillis, int(gap.Milliseconds()))
		if w.ended {
			rep.EndedN++
		}
		if gap <= bound && !w.ended {
			rep.Within++
		}
		rep.ReadMaxGapMillis = append(rep.ReadMaxGapMillis, int(w.read.longest(now).Milliseconds()))
		w.mu.Unlock()
		gaps = append(gaps, int(gap.Milliseconds()))
	}
	rep.P50, rep.P99, rep.MaxGap = percentile(gaps, 0.50), percentile(gaps, 0.99), percentile(gaps, 1)
	return rep
}

// percentile is the q-quantile of v (nearest rank); 0 for none. It sorts v.
func percentile[T int | time.Duration | float64](v []T, q float64) T {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	i := int(math.Ceil(q * float64(len(v)))) // nearest rank
	return v[min(max(i, 1), len(v))-1]
}
