package waitingroom

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/push"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// room is the running side of one Handler: the admission loop, the cached counters, the
// estimator, the local touch cache and the WebSocket hub. A reload makes a new room
// over the same (pooled) store; the old one stops in Cleanup.
type room struct {
	h      *Handler
	store  queue.Store
	logger *zap.Logger

	keys      atomic.Pointer[token.Keyring] // nil until a secret is agreed
	stats     atomic.Pointer[queue.Stats]   // last counters the loop read
	overrides atomic.Pointer[overrides]     // last runtime settings the loop read
	est       *queue.Estimator
	hub       *push.Hub
	ips       *ipCounters
	metrics   *roomMetrics
	history   *history // the console's last hour (history.go)

	// touched is when this instance last confirmed each visitor's session with the
	// store.
	touched queue.TouchCache
	// drawn holds the keys of the event lotteries this instance knows are drawn.
	drawn sync.Map

	kickCh   chan struct{}
	cancel   context.CancelFunc
	wg       sync.WaitGroup // the goroutines start started
	stopOnce sync.Once

	lastErrLog atomic.Int64
	errCount   atomic.Int64

	// agreed is the generated secret agreed through the store (nil when the secret is
	// configured), last confirmed at agreedAt.
	secretMu sync.Mutex
	agreed   []byte
	agreedAt time.Time
}

func newRoom(h *Handler, secrets [][]byte, m *roomMetrics) *room {
	rm := &room{
		h:       h,
		store:   h.store,
		logger:  h.logger,
		est:     queue.NewEstimator(),
		metrics: m,
		ips:     newIPCounters(),
		kickCh:  make(chan struct{}, 1),
		history: loadHistory(h.Name),
	}
	rm.stats.Store(&queue.Stats{})
	rm.overrides.Store(&overrides{})
	if secrets != nil {
		rm.keys.Store(token.NewKeyring(h.Name, secrets))
	}
	rm.hub = push.New(rm, rm.store, heartbeatEvery(time.Duration(h.QueueTTL)))
	return rm
}

// start runs the room's goroutines until ctx (the config's context) ends or stop.
func (rm *room) start(ctx caddy.Context) {
	c, cancel := context.WithCancel(ctx)
	rm.cancel = cancel
	rm.tick(c) // agree on a secret and read the counters before the first request
	rm.wg.Add(2)
	go func() { defer rm.wg.Done(); rm.run(c) }()
	go func() { defer rm.wg.Done(); rm.hub.Run(c) }()
}

// stop ends what start started and returns once it has all ended, store calls
// included: the store is released after it, and a call after that would find its
// client closed. A second stop does nothing, so the history is let go of once.
func (rm *room) stop() {
	rm.stopOnce.Do(func() {
		if rm.cancel != nil {
			rm.cancel()
		}
		rm.hub.CloseAll()
		rm.wg.Wait()
		rm.hub.Wait()
		releaseHistory(rm.h.Name)
	})
}

// kick asks for an admission step now (a slot was freed) without waiting for it.
func (rm *room) kick() {
	select {
	case rm.kickCh <- struct{}{}:
	default:
	}
}

func (rm *room) run(ctx context.Context) {
	t := time.NewTicker(stepEvery)
	defer t.Stop()
	prune := time.NewTicker(time.Minute)
	defer prune.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-rm.kickCh:
		case <-prune.C:
			rm.pruneTouched()
			if p := rm.h.PerIP; p != nil {
				rm.ips.prune(rm.h.clock.Now(), time.Duration(p.JoinWindow))
			}
			continue
		}
		rm.tick(ctx)
	}
}

// tick runs one admission step and refreshes the counters the pages show and the
// runtime settings (so an admin change made on any instance applies here within a tick).
func (rm *room) tick(ctx context.Context) {
	if err := rm.agreeSecret(ctx); err != nil {
		rm.storeError("agreeing on a secret", err)
		return
	}
	if err := rm.loadOverrides(ctx); err != nil {
		rm.storeError("reading runtime settings", err)
		return
	}
	now := rm.h.clock.Now()
	p := rm.h.policyAt(now)
	rm.drawLots(ctx, p)
	res, err := rm.store.Step(ctx, now, rm.h.limitsFor(p))
	if err != nil {
		rm.storeError("admission step", err)
		return
	}
	rm.metrics.admitted.Add(float64(len(res.Admitted)))
	rm.metrics.abandoned.Add(float64(res.Abandoned))
	st, err := rm.store.Stats(ctx)
	if err != nil {
		rm.storeError("reading counters", err)
		return
	}
	rm.stats.Store(&st)
	rm.est.Observe(now, st.AdmittedTotal)
	rm.history.observe(now, &st)
	rm.metrics.active.Set(float64(st.Active))
	rm.metrics.waiting.Set(float64(st.Waiting))
	rm.metrics.away.Set(float64(st.Away))
	rm.metrics.capacity.Set(float64(p.capacity))
}

// agreeSecret makes sure the room has a signing secret. A configured secret is set
// once at start. A generated one is agreed through the store (first offer wins), and
// offered again every secretCheckEvery: a store that lost it (Redis restarted empty)
// gets ours back before some other instance can plant a new one. Should another secret
// have won meanwhile, the room signs with that one and still accepts its own.
func (rm *room) agreeSecret(ctx context.Context) error {
	// tick runs on the room loop and, for admin calls, on the caller's goroutine.
	rm.secretMu.Lock()
	defer rm.secretMu.Unlock()
	keys := rm.keys.Load()
	if keys != nil && (rm.agreed == nil || time.Since(rm.agreedAt) < secretCheckEvery/2) {
		return nil
	}
	offer := rm.agreed
	if offer == nil {
		offer = newSecret()
	}
	secret, err := rm.store.Secret(ctx, offer)
	if err != nil {
		return err
	}
	rm.agreedAt = time.Now()
	if keys != nil && bytes.Equal(secret, rm.agreed) {
		return nil
	}
	secrets := [][]byte{secret}
	if rm.agreed != nil {
		secrets = append(secrets, rm.agreed)
		rm.logger.Warn("the room's generated secret changed in the store; accepting the old one too",
			zap.String("room", rm.h.Name))
	}
	rm.agreed = secret
	rm.keys.Store(token.NewKeyring(rm.h.Name, secrets))
	return nil
}

// loadOverrides reads the runtime settings document from the store. A document this
// version cannot read is logged and ignored, never applied halfway.
func (rm *room) loadOverrides(ctx context.Context) error {
	doc, err := rm.store.Overrides(ctx)
	if err != nil {
		return err
	}
	o := new(overrides)
	if len(doc) > 0 {
		if err := json.Unmarshal(doc, o); err != nil {
			rm.logger.Error("ignoring unreadable runtime settings", zap.String("room", rm.h.Name), zap.Error(err))
			o = new(overrides)
		}
	}
	rm.overrides.Store(o)
	rm.hub.SetHeartbeatEvery(heartbeatEvery(rm.h.queueTTL())) // a PATCHed queue_ttl
	return nil
}

// touchedRecently reports whether this instance confirmed id's session with the store
// within queue.TouchEvery: the admitted hot path.
func (rm *room) touchedRecently(id queue.VisitorID, now time.Time) bool {
	return rm.touched.Recent(id, now)
}

func (rm *room) markTouched(id queue.VisitorID, now time.Time) { rm.touched.Mark(id, now) }

func (rm *room) forgetTouched(id queue.VisitorID) { rm.touched.Forget(id) }

// pruneTouched drops cache entries of visitors whose sessions must have lapsed, so
// the cache holds about the admitted visitors and no more.
func (rm *room) pruneTouched() {
	rm.touched.Prune(rm.h.clock.Now().Add(-rm.h.sessionTTL()).UnixNano())
}

// storeError logs a store failure, at most once per storeErrorLogEvery, with how many
// were not logged in between: an outage at 30k requests per second must not become
// 30k log lines per second.
func (rm *room) storeError(op string, err error) {
	if errors.Is(err, context.Canceled) {
		// The caller gave up, not the store: a client that left mid-request, or the
		// room stopping under its own round. A hung store ends in a deadline instead.
		return
	}
	n := rm.errCount.Add(1)
	now := time.Now().UnixNano()
	last := rm.lastErrLog.Load()
	if now-last < int64(storeErrorLogEvery) || !rm.lastErrLog.CompareAndSwap(last, now) {
		return
	}
	rm.errCount.Add(-n)
	rm.logger.Warn("waiting room store unavailable",
		zap.String("room", rm.h.Name),
		zap.String("during", op),
		zap.Int64("failures_since_last_log", n),
		zap.String("fail", rm.h.Fail),
		zap.Error(err))
}

// The room as its hub sees it (push.Room).

// Now is the room's clock.
func (rm *room) Now() time.Time { return rm.h.clock.Now() }

// Teller is what the room's waiters are told at now.
func (rm *room) Teller(now time.Time) func(position int) page.View {
	return rm.h.teller(rm.h.policyAt(now))
}

// Left frees the place of a waiter who left from the page, and counts them.
func (rm *room) Left(id queue.VisitorID) {
	rm.kick()
	rm.metrics.abandoned.Inc()
	if ce := rm.logger.Check(zap.DebugLevel, "waiter left the queue"); ce != nil {
		ce.Write(zap.String("room", rm.h.Name), zap.Stringer("visitor", id))
	}
}

// StoreError logs a failed store call of the hub's.
func (rm *room) StoreError(op string, err error) { rm.storeError(op, err) }
