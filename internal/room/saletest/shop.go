package saletest

import (
	"strings"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/capacity"
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
	// read is, by control period, what the shop did as the adaptive capacity's law
	// is to read it: each visitor's first meterPerVisitor requests on each instance,
	// the flooders' as anyone's (counted, how many of each so far). honest is what
	// it did for everyone but the flooders, for the trace.
	read    map[int64]*queue.Sample
	counted map[int64]map[readKey]int
	honest  map[int64]*queue.Sample
}

// readKey is one visitor on one instance: the meter reads each visitor on each
// instance.
type readKey struct {
	instance int
	id       queue.VisitorID
}

// meterPerVisitor is how many of one visitor's requests on one instance a control
// period's reading takes (docs/adaptive-capacity.md: the reading weighs visitors,
// not requests).
const meterPerVisitor = 8

// cheapPage is a flooder's page: the shop answers it at once whatever its load.
const cheapPage = time.Millisecond

// flooderName marks an admitted client that floods the shop's cheapest page.
const flooderName = "flooder"

func newShop(servers int, service time.Duration) *shop {
	return &shop{servers: servers, service: service, read: map[int64]*queue.Sample{}, counted: map[int64]map[readKey]int{}, honest: map[int64]*queue.Sample{}}
}

// serve is the shop answering one request instance i handed on for who (visitor
// id), with as many inside as the store held at the last check.
func (sh *shop) serve(s *sale, i int, who string, id queue.VisitorID) {
	ttfb, failed := cheapPage, false
	flooder := strings.HasPrefix(who, flooderName)
	if !flooder {
		load := max(1, float64(s.watch.active)/float64(sh.servers))
		ttfb = time.Duration(float64(sh.service) * load)
		failed = s.watch.active > 3*sh.servers && s.rng.IntN(3) == 0
	}
	s.fleet[i].room.Served(id, ttfb, failed)
	// A request served at a period's first instant is measured into the period
	// before: the instants' admission steps, which take the meter, come after it.
	period := s.clock.Now().Add(-1).UnixNano() / int64(capacity.ControlPeriod)
	if sh.counted[period] == nil {
		sh.counted[period] = map[readKey]int{}
	}
	key := readKey{i, id}
	if sh.counted[period][key]++; sh.counted[period][key] <= meterPerVisitor {
		sampleOf(sh.read, period).add(ttfb, failed)
	}
	if !flooder {
		sampleOf(sh.honest, period).add(ttfb, failed)
	}
}

// sampleOf is period's sample in samples, made when there is none yet.
func sampleOf(samples map[int64]*queue.Sample, period int64) sample {
	sm := samples[period]
	if sm == nil {
		sm = &queue.Sample{Latency: make([]uint64, queue.LatencyBuckets)}
		samples[period] = sm
	}
	return sample{sm}
}

// sample adds answers to a queue.Sample.
type sample struct{ *queue.Sample }

func (sm sample) add(ttfb time.Duration, failed bool) {
	sm.Latency[queue.LatencyBucket(ttfb)]++
	if failed {
		sm.Failed++
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
		if d.Place != queue.Admitted {
			f.state = arriving
			return
		}
	}
}
