package waitingroom

import (
	"cmp"
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
)

// defaultArriveTTL is ArriveTTL's default: a connected page is told of its admission
// within a second and navigates at once, and one without a socket polls every few
// seconds, so an admitted waiter who has not come in 30 seconds is not looking.
const defaultArriveTTL = 30 * time.Second

// parseArriveTTL reads `arrive_ttl <duration>|0` into h, and returns the check of
// arrive_ttl against queue_ttl, to be made at the end of the block (queue_ttl may come
// after it) with the error on arrive_ttl's line.
func (h *Handler) parseArriveTTL(d *caddyfile.Dispenser) (check func() error, err error) {
	v, err := durationOrZero(d, "arrive_ttl")
	if err != nil {
		return nil, err
	}
	h.ArriveTTL = &v
	at := *d // the dispenser where it stands: the error's line
	return func() error {
		if err := room.CheckArrive(h.queueTTL(), time.Duration(v)); err != nil {
			return at.Err(err.Error())
		}
		return nil
	}, nil
}

// queueTTL is the configured queue_ttl, or its default.
func (h *Handler) queueTTL() time.Duration {
	return cmp.Or(time.Duration(h.QueueTTL), defaultQueueTTL)
}

// arriveTTL is the configured arrive_ttl, or its default.
func (h *Handler) arriveTTL() time.Duration {
	if h.ArriveTTL == nil {
		return defaultArriveTTL
	}
	return time.Duration(*h.ArriveTTL)
}

// validateArriveTTL refuses an arrive_ttl the room cannot keep (a JSON config's,
// which no Caddyfile check has seen).
func (h *Handler) validateArriveTTL() error {
	a := h.ArriveTTL
	if a == nil {
		return room.CheckArrive(h.queueTTL(), defaultArriveTTL)
	}
	if *a < 0 {
		return fmt.Errorf("arrive_ttl must be 0 (off) or a positive duration, got %v", time.Duration(*a))
	}
	if err := room.CheckTiming("arrive_ttl", time.Duration(*a)); err != nil {
		return err
	}
	return room.CheckArrive(h.queueTTL(), time.Duration(*a))
}

// NoShows counts the no-shows this instance's steps sent back (room.Metrics).
func (m *roomMetrics) NoShows(n int) { m.noShows.Add(float64(n)) }

// noShowsCounter is the metric of the no-shows, created with the others.
func noShowsCounter(ns, sub string, labels []string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "no_shows_total",
		Help: "Visitors admitted from the queue who made no request within arrive_ttl and gave the slot back, as sent back by this instance."}, labels)
}
