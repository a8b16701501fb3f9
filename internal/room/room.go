package room

import (
	"bytes"
	"context"
	"crypto/rand"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/time/rate"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/capacity"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/fairness"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/history"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/push"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// Room is one running room on this instance: its settings, the admission loop, the
// cached counters, the estimator, the local touch cache and the WebSocket hub. A
// reload makes a new Room over the same (pooled) store; the old one stops.
type Room struct {
	cfg *Config

	keys     atomic.Pointer[token.Keyring]     // nil until a secret is agreed
	stats    atomic.Pointer[queue.Stats]       // last counters the loop read
	settings atomic.Pointer[settings.Snapshot] // what the room runs with (settings.go)
	est      *queue.Estimator
	hub      *push.Hub
	ips      *ipCounters
	// handoffs bounds the hand-off codes this instance gives out (timing.go).
	handoffs *rate.Limiter

	// touched is when this instance last confirmed each visitor's session with the
	// store; keyedSince, with session_max on, when each key's session it confirmed
	// began (key.go).
	touched    queue.TouchCache
	keyedSince queue.TouchCache
	// draws are the room's draws on this instance (draws.go, internal/fairness).
	draws *fairness.Draws

	kickCh   chan struct{}
	cancel   context.CancelFunc
	wg       sync.WaitGroup // the goroutines Start started
	stopOnce sync.Once

	// steering is the room's part in the fleet's adaptive capacity, with its meter
	// of the shop (steering.go).
	steering capacity.Steering

	lastErrLog atomic.Int64
	errCount   atomic.Int64

	// fleet is the fleet record as last read, at fleetAt (unix ns; fleet.go).
	fleet   atomic.Pointer[queue.Fleet]
	fleetAt atomic.Int64

	// agreed is the generated secret agreed through the store (nil when the secret is
	// configured), last confirmed at agreedAt.
	secretMu sync.Mutex
	agreed   []byte
	agreedAt time.Time
}

// New makes the room cfg describes; Start runs it.
func New(cfg *Config) *Room {
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.ParseDuration == nil {
		cfg.ParseDuration = time.ParseDuration
	}
	if cfg.History == nil {
		cfg.History = history.New()
	}
	if cfg.Siblings == nil {
		cfg.Siblings = func() []*Room { return nil }
	}
	rm := &Room{
		cfg:      cfg,
		est:      estimatorOf(cfg.Store),
		ips:      newIPCounters(),
		handoffs: rate.NewLimiter(handoffsPerSecond, handoffBurst),
		kickCh:   make(chan struct{}, 1),
		draws:    fairness.New(cfg.Name, cfg.DrawPage, cfg.Logger, cfg.Random),
	}
	rm.stats.Store(&queue.Stats{})
	if cfg.Secrets != nil {
		rm.keys.Store(token.NewKeyring(cfg.Name, cfg.Secrets))
		rm.draws.SetSecrets(cfg.Secrets)
	}
	rm.hub = push.New(hubRoom{rm}, cfg.Store, heartbeatEvery(cfg.QueueTTL))
	rm.settings.Store(settings.At(&cfg.Config, settings.Overrides{}, cfg.Clock.Now()))
	return rm
}

// Name is the room's name.
func (rm *Room) Name() string { return rm.cfg.Name }

// Start runs the room's goroutines until ctx (the config's context) ends or Stop.
func (rm *Room) Start(ctx context.Context) {
	c, cancel := context.WithCancel(ctx)
	rm.cancel = cancel
	rm.warnReplacedSecret()
	rm.tick(c) // agree on a secret and read the counters before the first request
	rm.wg.Add(2)
	go func() { defer rm.wg.Done(); rm.run(c) }()
	go func() { defer rm.wg.Done(); rm.hub.Run(c) }()
}

// Stop ends what Start started and returns once it has all ended, store calls
// included: the store is released after it, and a call after that would find its
// client closed. A second stop does nothing, so the history is let go of once.
func (rm *Room) Stop() {
	rm.stopOnce.Do(func() {
		if rm.cancel != nil {
			rm.cancel()
		}
		rm.hub.CloseAll()
		rm.wg.Wait()
		rm.hub.Wait()
	})
}

// warnReplacedSecret warns when the configured secrets do not accept the cookies a
// running room of the same name signs (a reload that changed secret without listing
// the old one after it): every visitor holding one is then a stranger, and the places
// and sessions they hold stay until they lapse. The room does not release them: it
// cannot read their cookies to tell which they are, and on a fleet the instances not
// yet reloaded still sign with the old secret and honour those sessions, which a
// release would let in beyond capacity.
func (rm *Room) warnReplacedSecret() {
	keys := rm.keys.Load()
	if rm.cfg.Secrets == nil || keys == nil {
		return // agreed through the store, which keeps the one in use
	}
	for _, running := range rm.cfg.Siblings() {
		if old := running.Keys(); running != rm && old != nil && !keys.Accepts(old, rm.cfg.Clock.Now()) {
			rm.cfg.Logger.Warn("the room's secret changed and the one it signed with is not listed as a previous secret: "+
				"every cookie given out so far no longer holds, so admitted visitors come back as new visitors "+
				"while their old sessions hold their slots until session_ttl, and waiters lose their places; "+
				"to rotate, list the old secret after the new one (secret <new> <old>) until session_ttl has passed",
				zap.String("room", rm.cfg.Name), zap.Duration("session_ttl", rm.cfg.SessionTTL))
			return
		}
	}
}

// kick asks for an admission step now (a slot was freed) without waiting for it.
func (rm *Room) kick() {
	select {
	case rm.kickCh <- struct{}{}:
	default:
	}
}

func (rm *Room) run(ctx context.Context) {
	t := time.NewTicker(StepEvery)
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
			if p := rm.cfg.PerIP; p.MaxJoins > 0 {
				rm.ips.prune(rm.cfg.Clock.Now(), p.JoinWindow)
			}
			continue
		}
		rm.tick(ctx)
	}
}

// tick runs one admission step and refreshes the counters the pages show and the
// runtime settings (so an admin change made on any instance applies here within a tick).
func (rm *Room) tick(ctx context.Context) {
	if err := rm.agreeSecret(ctx); err != nil {
		rm.storeError("agreeing on a secret", err)
		return
	}
	if err := rm.loadOverrides(ctx); err != nil {
		rm.storeError("reading runtime settings", err)
		return
	}
	now := rm.cfg.Clock.Now()
	p := rm.Settings(now)
	rm.recordFleet(ctx, now, p.QueueTTL)
	last := rm.stats.Load()
	lim := rm.drawn(ctx, p, now, true, p.Capacity-last.Active) // an event's draw comes before its first admission
	rm.draws.Work(ctx, rm.cfg.Store, rm.storeError)
	res, err := rm.cfg.Store.Step(ctx, now, lim)
	if err != nil {
		rm.storeError("admission step", err)
		return
	}
	rm.cfg.Metrics.Admitted(len(res.Admitted))
	rm.cfg.Metrics.AdmittedBy(res.ByReason)
	rm.cfg.Metrics.Abandoned(res.Abandoned)
	rm.cfg.Metrics.NoShows(res.NoShows)
	st, err := rm.cfg.Store.Stats(ctx)
	if err != nil {
		rm.storeError("reading counters", err)
		return
	}
	rm.stats.Store(&st)
	rm.est.Observe(now, st.AdmittedTotal)
	rm.cfg.History.Observe(now, &st)
	rm.steer(ctx, now, p, &st)
	p = rm.Settings(now) // the capacity steer may have set
	rm.cfg.Metrics.Counters(&st, p.Capacity)
	var target time.Duration
	if p.Adapt != nil {
		target = p.Adapt.Latency
	}
	rm.cfg.Metrics.LatencyTarget(target)
	rm.cfg.History.Settings(now, p.Capacity, target)
}

// agreeSecret makes sure the room has a signing secret. A configured secret is set
// once at start. A generated one is agreed through the store (first offer wins), and
// offered again every secretCheckEvery: a store that lost it (Redis restarted empty)
// gets ours back before some other instance can plant a new one. Should another secret
// have won meanwhile, the room signs with that one and still accepts its own.
func (rm *Room) agreeSecret(ctx context.Context) error {
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
	secret, err := rm.cfg.Store.Secret(ctx, offer)
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
		rm.cfg.Logger.Warn("the room's generated secret changed in the store; accepting the old one too",
			zap.String("room", rm.cfg.Name))
	}
	rm.agreed = secret
	rm.keys.Store(token.NewKeyring(rm.cfg.Name, secrets))
	rm.draws.SetSecrets(secrets)
	return nil
}

// touchedRecently reports whether this instance confirmed id's session with the store
// within queue.TouchEvery: the admitted hot path.
func (rm *Room) touchedRecently(id queue.VisitorID, now time.Time) bool {
	return rm.touched.Recent(id, now)
}

func (rm *Room) markTouched(id queue.VisitorID, now time.Time) { rm.touched.Mark(id, now) }

func (rm *Room) forgetTouched(id queue.VisitorID) {
	rm.touched.Forget(id)
	rm.keyedSince.Forget(id)
}

// pruneTouched drops cache entries of visitors whose sessions must have lapsed, so
// the cache holds about the admitted visitors and no more.
func (rm *Room) pruneTouched() {
	now := rm.cfg.Clock.Now()
	s := rm.Settings(now)
	rm.touched.Prune(now.Add(-s.SessionTTL).UnixNano())
	rm.keyedSince.Prune(now.Add(-s.SessionMax - queue.TouchEvery).UnixNano())
}

// hubRoom is the room as its hub sees it (push.Room).
type hubRoom struct{ rm *Room }

// Now is the room's clock.
func (h hubRoom) Now() time.Time { return h.rm.cfg.Clock.Now() }

// Teller is what the room's waiters are told at now.
func (h hubRoom) Teller(now time.Time) func(position int) page.View {
	return h.rm.teller(h.rm.Settings(now), now)
}

// Message is the message to the line.
func (h hubRoom) Message() string { return h.rm.Settings(h.rm.cfg.Clock.Now()).Message }

// Left frees the place of a waiter who left from the page, and counts them.
func (h hubRoom) Left(id queue.VisitorID) {
	rm := h.rm
	rm.kick()
	rm.cfg.Metrics.Abandoned(1)
	if ce := rm.cfg.Logger.Check(zap.DebugLevel, "waiter left the queue"); ce != nil {
		ce.Write(zap.String("room", rm.cfg.Name), zap.Stringer("visitor", id))
	}
}

// StoreError logs a failed store call of the hub's.
func (h hubRoom) StoreError(op string, err error) { h.rm.storeError(op, err) }

// newSecret is a random signing secret offered to the store when none is configured.
func newSecret() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
}

// estimatorOf is the store's own estimator when it keeps one (the memory store does,
// across reloads and restarts), else a new one: on a shared store, each instance
// measures the fleet's admissions itself.
func estimatorOf(s queue.Store) *queue.Estimator {
	if k, ok := s.(interface{ Estimator() *queue.Estimator }); ok {
		return k.Estimator()
	}
	return queue.NewEstimator()
}
