package waitingroom

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// The room's Prometheus collectors, created once per process and registered into each
// config's registry (Caddy makes a new one per config load), so values carry across
// reloads. Their only label is the room. Counters count what this instance did; on a
// fleet, sum them. Gauges are the room-wide values every instance reads from the shared
// store; on a fleet, take max.
var metrics struct {
	once      sync.Once
	active    *prometheus.GaugeVec
	waiting   *prometheus.GaugeVec
	away      *prometheus.GaugeVec
	capacity  *prometheus.GaugeVec
	admitted  *prometheus.CounterVec
	queued    *prometheus.CounterVec
	abandoned *prometheus.CounterVec
	wait      *prometheus.HistogramVec
	ttfb      *ttfbHistogram
	failed    *prometheus.CounterVec
	target    *prometheus.GaugeVec
	noShows   *prometheus.CounterVec // arrive.go
	handoffs  *prometheus.CounterVec // handoff.go
}

func initMetrics() {
	metrics.once.Do(func() {
		const ns, sub = "caddy", "waiting_room"
		labels := []string{"room"}
		gauge := func(name, help string) *prometheus.GaugeVec {
			return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help}, labels)
		}
		counter := func(name, help string) *prometheus.CounterVec {
			return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help}, labels)
		}
		metrics.active = gauge("active", "Visitors admitted and holding a slot (room-wide).")
		metrics.waiting = gauge("waiting", "Visitors waiting in the queue and heard from within queue_ttl (room-wide).")
		metrics.away = gauge("away", "Waiters gone quiet past queue_ttl who keep their place for away_ttl (room-wide).")
		metrics.capacity = gauge("capacity", "Visitors the room admits at once (effective, after runtime changes).")
		metrics.admitted = counter("admitted_total", "Visitors admitted by this instance, at once or from the queue.")
		metrics.queued = counter("queued_total", "Visitors this instance put in the queue.")
		metrics.abandoned = counter("abandoned_total", "Waiters who left the queue, or whose place was dropped after away_ttl (queue_ttl when away_ttl is 0) of silence, as seen by this instance.")
		metrics.noShows = noShowsCounter(ns, sub, labels)
		metrics.handoffs = handoffsCounter(ns, sub, labels)
		metrics.wait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Subsystem: sub, Name: "wait_seconds",
			Help:    "How long admitted waiters waited in the queue.",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200},
		}, labels)
		metrics.ttfb = newTTFBHistogram() // ttfbmetric.go
		metrics.target = gauge("adapt_latency_target_seconds", "The adaptive capacity's target for the shop's p90 time to first byte; 0 while adapt is off (room-wide).")
		metrics.failed = counter("upstream_failed_total", "Requests of admitted visitors that failed: a 5xx, or an error from the next handler (this instance).")
	})
}

// roomMetrics are one room's children of the collectors, looked up once.
type roomMetrics struct {
	active, waiting, away       prometheus.Gauge
	capacity                    prometheus.Gauge
	admitted, queued, abandoned prometheus.Counter
	wait                        prometheus.Observer
	room                        string
	failed                      prometheus.Counter
	target                      prometheus.Gauge
	noShows                     prometheus.Counter
	handoffs                    prometheus.Counter
}

func newRoomMetrics(room string, registry *prometheus.Registry) (*roomMetrics, error) {
	initMetrics()
	if registry != nil {
		for _, c := range []prometheus.Collector{metrics.active, metrics.waiting, metrics.away, metrics.capacity,
			metrics.admitted, metrics.queued, metrics.abandoned, metrics.wait, metrics.ttfb, metrics.failed, metrics.target,
			metrics.noShows, metrics.handoffs} {
			// Several rooms in one config register the same collectors: that is fine.
			if err := registry.Register(c); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
				return nil, fmt.Errorf("registering metrics: %w", err)
			}
		}
	}
	metrics.ttfb.start(room)
	return &roomMetrics{
		active:    metrics.active.WithLabelValues(room),
		waiting:   metrics.waiting.WithLabelValues(room),
		away:      metrics.away.WithLabelValues(room),
		capacity:  metrics.capacity.WithLabelValues(room),
		admitted:  metrics.admitted.WithLabelValues(room),
		queued:    metrics.queued.WithLabelValues(room),
		abandoned: metrics.abandoned.WithLabelValues(room),
		wait:      metrics.wait.WithLabelValues(room),
		room:      room,
		failed:    metrics.failed.WithLabelValues(room),
		target:    metrics.target.WithLabelValues(room),
		noShows:   metrics.noShows.WithLabelValues(room),
		handoffs:  metrics.handoffs.WithLabelValues(room),
	}, nil
}

// deleteRoomMetrics drops the room's series from every collector. unregister calls it
// when the last handler of that name in this process is cleaned up, so a room taken
// out of the config stops exporting its last values. A reload that keeps the room
// provisions the new handler before cleaning up the old one, so its series, counters
// included, carry over. A handler still holding its children may go on updating them:
// a deleted child is no longer exported and is not added back.
func deleteRoomMetrics(room string) {
	initMetrics()
	for _, v := range []interface{ DeleteLabelValues(...string) bool }{metrics.active, metrics.waiting,
		metrics.away, metrics.capacity, metrics.admitted, metrics.queued, metrics.abandoned, metrics.wait,
		metrics.failed, metrics.target, metrics.noShows, metrics.handoffs} {
		v.DeleteLabelValues(room)
	}
	metrics.ttfb.delete(room)
}

// The room's counts (room.Metrics).

func (m *roomMetrics) Admitted(n int)  { m.admitted.Add(float64(n)) }
func (m *roomMetrics) Queued()         { m.queued.Inc() }
func (m *roomMetrics) Abandoned(n int) { m.abandoned.Add(float64(n)) }

func (m *roomMetrics) Waited(d time.Duration) { m.wait.Observe(d.Seconds()) }

func (m *roomMetrics) LatencyTarget(d time.Duration) { m.target.Set(d.Seconds()) }

func (m *roomMetrics) Measured(s *queue.Sample, total time.Duration) {
	metrics.ttfb.add(m.room, s, total)
	m.failed.Add(float64(s.Failed))
}

func (m *roomMetrics) Counters(st *queue.Stats, capacity int) {
	m.active.Set(float64(st.Active))
	m.waiting.Set(float64(st.Waiting))
	m.away.Set(float64(st.Away))
	m.capacity.Set(float64(capacity))
}
