package saletest

import (
	"strings"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
)

// shop is the upstream, for a room with `adapt`: it serves servers requests at once
// with a service time, so its time to first byte grows with the visitors inside
// past that, and it fails some requests when far past it. Every request the room
// hands on reaches it; the instance that handed it on measures it (Room.Served), as
// the module does. A flooder's requests are for the shop's cheapest page.
type shop struct {
	servers int
	service time.Duration
	// honest is what the shop did for everyone but the flooders, by control period:
	// what the adaptive capacity should move on. flooded counts each flooder's
	// requests by period and instance, for the weight the meter gives them.
	honest  map[int64]*queue.Sample
	flooded map[int64]map[floodKey]int
}

// floodKey is one flooder on one instance: the meter reads each visitor on each
// instance.
type floodKey struct {
	instance int
	who      string
}

// meterPerVisitor is how many of one visitor's requests on one instance a control
// period's reading takes (docs/adaptive-capacity.md: the reading weighs visitors,
// not requests).
const meterPerVisitor = 8

// floodWeight is how many of the flooders' requests period's reading holds, if the
// meter weighs them as it says.
func (sh *shop) floodWeight(period int64) int {
	n := 0
	for _, c := range sh.flooded[period] {
		n += min(c, meterPerVisitor)
	}
	return n
}

// cheapPage is a flooder's page: the shop answers it at once whatever its load.
const cheapPage = time.Millisecond

// flooderName marks an admitted client that floods the shop's cheapest page.
const flooderName = "flooder"

func newShop(servers int, service time.Duration) *shop {
	return &shop{servers: servers, service: service, honest: map[int64]*queue.Sample{}, flooded: map[int64]map[floodKey]int{}}
}

// serve is the shop answering one request instance i handed on for who (visitor
// id), with as many inside as the store held at the last check.
func (sh *shop) serve(s *sale, i int, who string, id queue.VisitorID) {
	// A request served at a period's first instant is measured into the period
	// before: the instants' admission steps, which take the meter, come after it.
	period := s.clock.Now().Add(-1).UnixNano() / int64(room.ControlPeriod)
	if strings.HasPrefix(who, flooderName) {
		s.fleet[i].room.Served(id, cheapPage, false)
		if sh.flooded[period] == nil {
			sh.flooded[period] = map[floodKey]int{}
		}
		sh.flooded[period][floodKey{i, who}]++
		return
	}
	load := max(1, float64(s.watch.active)/float64(sh.servers))
	ttfb := time.Duration(float64(sh.service) * load)
	failed := s.watch.active > 3*sh.servers && s.rng.IntN(3) == 0
	s.fleet[i].room.Served(id, ttfb, failed)
	sample := sh.honest[period]
	if sample == nil {
		sample = &queue.Sample{Latency: make([]uint64, queue.LatencyBuckets)}
		sh.honest[period] = sample
	}
	sample.Latency[queue.LatencyBucket(ttfb)]++
	if failed {
		sample.Failed++
	}
}

// flooder is an honest visitor until it is in; from then on it floods the shop's
// cheapest page, floodPerStep requests a step spread over the instances, for as
// long as its session lasts: one admitted client who would outvote the rest. It
// makes many times what an honest visitor does, so that a reading that counted
// requests would be its alone.
type flooder struct {
	visitor
}

// floodPerStep is a flooder's requests a step: 128 a control period.
const floodPerStep = 16

func (f *flooder) act(s *sale) {
	if f.state != inside {
		f.visitor.act(s)
		if f.state == inside {
			f.shopEnd = saleStart.Add(time.Duration(1 << 62)) // it never leaves of its own accord
		}
		return
	}
	for range floodPerStep {
		d, _ := s.visit(f.name, room.Visit{Cookie: f.dev.cookie, Addr: f.name})
		f.dev.keep(&d)
		if d.Outcome != room.Admitted {
			f.state = arriving
			return
		}
	}
}
