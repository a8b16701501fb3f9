package caddytest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A sale followed visitor by visitor, on a fleet that shares one Redis: the test keeps
// its own record of who is inside and who waits in which order (pass holders first,
// then everyone else, each in arrival order), sends each visitor's every request to
// the instance after the one of its last request, so that what one instance gave a
// visitor is always shown to another, and checks the fleet against the record. With one request at a time, τ = 1 holds exactly: the
// next one in is the head of the line, and every waiter's position is its index + 1.

// saleVisitor is one person of a sale.
type saleVisitor struct {
	name string
	g    *guest
	last int // the index in the fleet of the instance of its last request
}

type saleRecord struct {
	t        *testing.T
	f        *fleet
	room     string
	capacity int
	rdb      redis.UniversalClient

	inside   []*saleVisitor
	line     []*saleVisitor // line[:passLane] hold a pass
	passLane int
	order    []string // who was let in, in order
	turn     int      // for arrivals

	samples, maxActive atomic.Int64
	sampleErr          atomic.Value // string: the first sampler error while Redis was up
	redisDown          atomic.Bool
}

// newSale starts sampling the store's active set: how many hold a slot, room-wide,
// every few milliseconds until the test ends.
func newSale(t *testing.T, f *fleet, room string, capacity int, rdb redis.UniversalClient) *saleRecord {
	s := &saleRecord{t: t, f: f, room: room, capacity: capacity, rdb: rdb}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			n, err := rdb.ZCard(ctx, roomKey(room, "active")).Result()
			switch {
			case ctx.Err() != nil:
				return
			case err != nil && !s.redisDown.Load():
				s.sampleErr.CompareAndSwap(nil, err.Error())
			case err == nil:
				s.samples.Add(1)
				if n > s.maxActive.Load() {
					s.maxActive.Store(n)
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

// next is the instance a new arrival goes to: each in turn.
func (s *saleRecord) next() *node {
	nd := s.f.nodes[s.turn%len(s.f.nodes)]
	s.turn++
	return nd
}

// nextFor is the instance v's next request goes to: the one after its last.
func (s *saleRecord) nextFor(v *saleVisitor) *node {
	v.last = (v.last + 1) % len(s.f.nodes)
	return s.f.nodes[v.last]
}

// indexOf is nd's index in the fleet.
func (s *saleRecord) indexOf(nd *node) int {
	for i, n := range s.f.nodes {
		if n == nd {
			return i
		}
	}
	s.t.Fatalf("%s is not in the fleet", nd.name)
	return 0
}

// join brings a new visitor to nd, with a pass or none (""): let in when there is room
// and nobody waits, otherwise queued at the end of its lane.
func (s *saleRecord) join(name string, nd *node, pass string) *saleVisitor {
	s.t.Helper()
	v := &saleVisitor{name: name, g: newGuest(), last: s.indexOf(nd)}
	a, err := v.g.withPass(nd.base, "/shop", pass)
	if err != nil {
		s.t.Fatalf("%s arriving on %s: %v", name, nd.name, err)
	}
	if len(s.line) == 0 && len(s.inside) < s.capacity {
		if !a.admitted {
			s.t.Fatalf("%s arriving on %s with room to spare: %+v, want let in", name, nd.name, a)
		}
		s.inside = append(s.inside, v)
		s.order = append(s.order, name)
		return v
	}
	want := len(s.line) + 1
	if pass != "" {
		want = s.passLane + 1
	}
	if a.admitted || a.Status != "queued" || a.Position != want || a.Pass != "" {
		s.t.Fatalf("%s arriving on %s (pass %v): %+v, want queued at %d", name, nd.name, pass != "", a, want)
	}
	if pass != "" {
		s.line = append(s.line[:s.passLane], append([]*saleVisitor{v}, s.line[s.passLane:]...)...)
		s.passLane++
	} else {
		s.line = append(s.line, v)
	}
	return v
}

// check asks the fleet about everyone, each on its next instance: every waiter at
// exactly its place, everyone inside still in, and the store (through each instance's
// admin API, and read directly) counting as many of each.
func (s *saleRecord) check(when string) {
	s.t.Helper()
	for i, v := range s.line {
		nd := s.nextFor(v)
		q, in, err := v.g.place(nd.base, "/shop")
		if err != nil || in || q.Position != i+1 || q.Waiting != len(s.line) {
			s.t.Fatalf("%s: %s on %s: admitted=%v %+v (%v), want queued at %d of %d", when, v.name, nd.name, in, q, err, i+1, len(s.line))
		}
	}
	for _, v := range s.inside {
		nd := s.nextFor(v)
		if _, in, err := v.g.place(nd.base, "/shop/page"); err != nil || !in {
			s.t.Fatalf("%s: %s, inside, on %s: not let through (%v)", when, v.name, nd.name, err)
		}
	}
	if n, err := s.rdb.ZCard(context.Background(), roomKey(s.room, "active")).Result(); err != nil || n != int64(len(s.inside)) {
		s.t.Fatalf("%s: the store's active set holds %d (%v), want the %d inside", when, n, err, len(s.inside))
	}
	for _, nd := range s.f.nodes {
		waitFor(s.t, when+": "+nd.name+"'s admin API to count the room as the sale has it", func() bool {
			obj, err := tryFleetRoom(nd, s.room)
			return err == nil && obj.Active == len(s.inside) && obj.Waiting == len(s.line)
		})
	}
	if msg, _ := s.sampleErr.Load().(string); msg != "" {
		s.t.Fatalf("%s: sampling the active set with Redis up: %s", when, msg)
	}
	if m := s.maxActive.Load(); m > int64(s.capacity) {
		s.t.Fatalf("%s: the store's active set reached %d, capacity %d", when, m, s.capacity)
	}
}

// checkout lets the i-th visitor inside check out on its next instance, then waits
// for the freed slot to go to the head of the line (asked on its next instances in
// turn), while the one behind the head is never let in.
func (s *saleRecord) checkout(i int) {
	s.t.Helper()
	v := s.inside[i]
	nd := s.nextFor(v)
	if _, body, err := v.g.get(nd.base, "/shop/done", ""); err != nil || body != "done" {
		s.t.Fatalf("%s checking out on %s: %q (%v)", v.name, nd.name, short(body), err)
	}
	s.inside = append(s.inside[:i:i], s.inside[i+1:]...)
	if len(s.line) == 0 {
		return
	}
	head := s.line[0]
	waitFor(s.t, head.name+", at the head, to be let in after "+v.name+" checked out", func() bool {
		if len(s.line) > 1 {
			nd := s.nextFor(s.line[1])
			q, in, err := s.line[1].g.place(nd.base, "/shop")
			if err != nil || in || q.Position < 1 {
				s.t.Fatalf("%s, second in line, on %s while %s's turn came: admitted=%v %+v (%v)", s.line[1].name, nd.name, head.name, in, q, err)
			}
		}
		nd := s.nextFor(head)
		q, in, err := head.g.place(nd.base, "/shop")
		if err != nil || !in && q.Position != 1 {
			s.t.Fatalf("%s, at the head, on %s: admitted=%v %+v (%v)", head.name, nd.name, in, q, err)
		}
		return in
	})
	s.line = s.line[1:]
	if s.passLane > 0 {
		s.passLane--
	}
	s.inside = append(s.inside, head)
	s.order = append(s.order, head.name)
}

// handoff: the i-th waiter asks one instance for a code and opens its link on another
// with a new device, which then holds the place (the old one is told it moved).
func (s *saleRecord) handoff(i int, ask, open *node) {
	s.t.Helper()
	old := s.line[i]
	a, err := old.g.askHandoff(ask.base, "/shop")
	if err != nil {
		s.t.Fatalf("%s asking %s for a code: %v", old.name, ask.name, err)
	}
	phone := newGuest()
	if p := phone.openLink(s.t, a.HandoffURL, open.base); p.Status != "queued" || p.Position != i+1 || p.Handoff != "" {
		s.t.Fatalf("%s's code, asked on %s, opened on %s: %+v, want queued at %d", old.name, ask.name, open.name, p, i+1)
	}
	if code, body, err := old.g.get(ask.base, "/shop", "application/json"); err != nil || !strings.Contains(body, `"status":"moved"`) {
		s.t.Fatalf("%s's old device on %s after the move: %d %q (%v), want told its place moved", old.name, ask.name, code, short(body), err)
	}
	s.line[i] = &saleVisitor{name: old.name + "'s phone", g: phone, last: s.indexOf(open)}
}

// tryFleetRoom reads nd's room object, for a wait that tolerates a moment's error.
func tryFleetRoom(nd *node, room string) (roomObject, error) {
	var obj roomObject
	resp, err := http.Get(nd.admin + "/waiting_room/" + room)
	if err != nil {
		return obj, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return obj, fmt.Errorf("GET room on %s: %d", nd.name, resp.StatusCode)
	}
	return obj, json.NewDecoder(resp.Body).Decode(&obj)
}
