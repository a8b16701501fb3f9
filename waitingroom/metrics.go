package waitingroom

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/capacity"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// The room's Prometheus collectors, created once per process and registered into each
// config's registry (Caddy makes a new one per config load), so values carry across
// reloads. Their only label is the room, but admitted_by_reason_total's, which has the
// reason too (one of six). Counters count what this instance did; on a
// fleet, sum them. Gauges are the room-wide values every instance reads from the shared
// store; on a fleet, take max. docs/metrics.md is the table.
var metrics struct {
	once                                sync.Once
	active, waiting, away, capacity     *prometheus.GaugeVec
	target                              *prometheus.GaugeVec
	admitted, queued, abandoned, failed *prometheus.CounterVec
	noShows, handoffs                   *prometheus.CounterVec
	byReason                            *prometheus.CounterVec // room and reason
	wait                                *prometheus.HistogramVec
	ttfb                                *capacity.Histogram
	all                                 []prometheus.Collector // every one of them, for registering
	vecs                                []interface{ DeleteLabelValues(...string) bool }
}

func initMetrics() {
	metrics.once.Do(func() {
		const ns, sub = "caddy", "waiting_room"
		labels := []string{"room"}
		gauge := func(name, help string) *prometheus.GaugeVec {
			v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help}, labels)
			metrics.all, metrics.vecs = append(metrics.all, v), append(metrics.vecs, v)
			return v
		}
		counter := func(name, help string) *prometheus.CounterVec {
			v := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help}, labels)
			metrics.all, metrics.vecs = append(metrics.all, v), append(metrics.vecs, v)
			return v
		}
		metrics.active = gauge("active", "Visitors admitted and holding a slot (room-wide).")
		metrics.waiting = gauge("waiting", "Visitors waiting in the queue and heard from within queue_ttl (room-wide).")
		metrics.away = gauge("away", "Waiters gone quiet past queue_ttl who keep their place for away_ttl (room-wide).")
		metrics.capacity = gauge("capacity", "Visitors the room admits at once (effective, after runtime changes).")
		metrics.admitted = counter("admitted_total", "Visitors admitted by this instance, at once or from the queue.")
		metrics.queued = counter("queued_total", "Visitors this instance put in the queue.")
		metrics.abandoned = counter("abandoned_total", "Waiters who left the queue, or whose place was dropped after away_ttl (queue_ttl when away_ttl is 0) of silence, as seen by this instance.")
		metrics.noShows = counter("no_shows_total", "Visitors admitted from the queue who made no request within arrive_ttl and gave the slot back, as sent back by this instance.")
		metrics.handoffs = counter("handoffs_total", "Places given to another device with a hand-off code, by this instance.")
		metrics.wait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Subsystem: sub, Name: "wait_seconds",
			Help:    "How long admitted waiters waited in the queue.",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200},
		}, labels)
		metrics.ttfb = capacity.NewHistogram()
		metrics.all, metrics.vecs = append(metrics.all, metrics.wait, metrics.ttfb), append(metrics.vecs, metrics.wait)
		metrics.target = gauge("adapt_latency_target_seconds", "The adaptive capacity's target for the shop's p90 time to first byte; 0 while adapt is off (room-wide).")
		metrics.failed = counter("upstream_failed_total", "Requests of admitted visitors that failed: a 5xx, or an error from the next handler (this instance).")
		metrics.byReason = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "admitted_by_reason_total",
			Help: "Visitors admitted by this instance's store calls, by reason: in_order, pass, returned, handoff (a session moved to another device, beside admitted_total), admin, random."},
			[]string{"room", "reason"})
		metrics.all = append(metrics.all, metrics.byReason)
	})
}

// roomMetrics are one room's children of the collectors, looked up once: the room's
// counts (room.Metrics).
type roomMetrics struct {
	room                                    string
	active, waiting, away, capacity, target prometheus.Gauge
	admitted, queued, abandoned, failed     prometheus.Counter
	noShows, handoffs                       prometheus.Counter
	wait                                    prometheus.Observer
	byReason                                [queue.NumReasons]prometheus.Counter
}

func newRoomMetrics(room string, registry *prometheus.Registry) (*roomMetrics, error) {
	initMetrics()
	for _, c := range metrics.all {
		if registry == nil {
			break
		}
		// Several rooms in one config register the same collectors: that is fine.
		if err := registry.Register(c); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
			return nil, fmt.Errorf("registering metrics: %w", err)
		}
	}
	metrics.ttfb.Start(room)
	m := &roomMetrics{room: room,
		active: metrics.active.WithLabelValues(room), waiting: metrics.waiting.WithLabelValues(room),
		away: metrics.away.WithLabelValues(room), capacity: metrics.capacity.WithLabelValues(room),
		target: metrics.target.WithLabelValues(room), admitted: metrics.admitted.WithLabelValues(room),
		queued: metrics.queued.WithLabelValues(room), abandoned: metrics.abandoned.WithLabelValues(room),
		failed: metrics.failed.WithLabelValues(room), noShows: metrics.noShows.WithLabelValues(room),
		handoffs: metrics.handoffs.WithLabelValues(room), wait: metrics.wait.WithLabelValues(room),
	}
	for r := range queue.NumReasons { // every reason from the start: a query sees zeros, not gaps
		m.byReason[r] = metrics.byReason.WithLabelValues(room, r.String())
	}
	return m, nil
}

// deleteRoomMetrics drops the room's series from every collector. unregister calls it
// when the last handler of that name in this process is cleaned up, so a room taken
// out of the config stops exporting its last values. A reload that keeps the room
// provisions the new handler before cleaning up the old one, so its series, counters
// included, carry over. A handler still holding its children may go on updating them:
// a deleted child is no longer exported and is not added back.
func deleteRoomMetrics(room string) {
	initMetrics()
	for _, v := range metrics.vecs {
		v.DeleteLabelValues(room)
	}
	metrics.byReason.DeletePartialMatch(prometheus.Labels{"room": room})
	metrics.ttfb.Delete(room)
}

func (m *roomMetrics) Admitted(n int)                { m.admitted.Add(float64(n)) }
func (m *roomMetrics) Queued()                       { m.queued.Inc() }
func (m *roomMetrics) Abandoned(n int)               { m.abandoned.Add(float64(n)) }
func (m *roomMetrics) NoShows(n int)                 { m.noShows.Add(float64(n)) }
func (m *roomMetrics) Handoff()                      { m.handoffs.Inc() }
func (m *roomMetrics) Waited(d time.Duration)        { m.wait.Observe(d.Seconds()) }
func (m *roomMetrics) LatencyTarget(d time.Duration) { m.target.Set(d.Seconds()) }

func (m *roomMetrics) AdmittedBy(n queue.ByReason) {
	for r, c := range n {
		if c > 0 {
			m.byReason[r].Add(float64(c))
		}
	}
}

func (m *roomMetrics) Measured(s *queue.Sample, total time.Duration) {
	metrics.ttfb.Add(m.room, s, total)
	m.failed.Add(float64(s.Failed))
}

func (m *roomMetrics) Counters(st *queue.Stats, capacity int) {
	m.active.Set(float64(st.Active))
	m.waiting.Set(float64(st.Waiting))
	m.away.Set(float64(st.Away))
	m.capacity.Set(float64(capacity))
}
