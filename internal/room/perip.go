package room

import (
	"sync"
	"time"
)

// ipCounters keeps the per-address join windows and open connections of one room.
type ipCounters struct {
	mu    sync.Mutex
	joins map[string]*joinWindow
	conns map[string]int
}

type joinWindow struct {
	start time.Time
	n     int
}

func newIPCounters() *ipCounters {
	return &ipCounters{joins: make(map[string]*joinWindow), conns: make(map[string]int)}
}

// allowJoin counts a join from addr and reports whether it is within max per window.
func (c *ipCounters) allowJoin(addr string, now time.Time, max int, window time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.joins[addr]
	if w == nil || now.Sub(w.start) >= window {
		w = &joinWindow{start: now}
		c.joins[addr] = w
	}
	if w.n >= max {
		return false
	}
	w.n++
	return true
}

// giveBack uncounts the join allowJoin counted for addr at counted, for a request that
// turned out not to join (it was challenged instead). A window that began after
// counted does not hold that join, so it is left alone. addr "" counted nothing.
func (c *ipCounters) giveBack(addr string, counted time.Time) {
	if addr == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if w := c.joins[addr]; w != nil && w.n > 0 && !counted.Before(w.start) {
		w.n--
	}
}

// openConn counts an open socket from addr unless max are open already.
func (c *ipCounters) openConn(addr string, max int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conns[addr] >= max {
		return false
	}
	c.conns[addr]++
	return true
}

func (c *ipCounters) closeConn(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conns[addr]--; c.conns[addr] <= 0 {
		delete(c.conns, addr)
	}
}

// prune forgets join windows that have ended, so the map holds recent addresses only.
func (c *ipCounters) prune(now time.Time, window time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for addr, w := range c.joins {
		if now.Sub(w.start) >= window {
			delete(c.joins, addr)
		}
	}
}
