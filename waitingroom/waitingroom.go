package waitingroom

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

func init() {
	caddy.RegisterModule(Handler{})
}

// Handler is a virtual waiting room. While fewer than `capacity` visitors are admitted,
// requests pass through to the next handler; beyond that, new visitors get a waiting
// page (or JSON) with their live place in line, and are let in first come, first served
// as slots free up. Visitors are told apart by a signed cookie that the server mints.
type Handler struct {
	// Name of the room. Required. Handlers with the same name (in one config, or on
	// several Caddy instances sharing a store) are the same queue. "dashboard" is
	// refused: the admin API serves its dashboard at that room's path.
	Name string `json:"name,omitempty"`

	// Capacity is how many visitors may be admitted at once. Required, greater than 0.
	Capacity int `json:"capacity,omitempty"`

	// Rate limits admissions to at most `count` in any window of `per`, in addition to
	// capacity, room-wide (every instance sharing the store together). Useful when the
	// upstream can hold many sessions but not many fresh logins at once. Default: no
	// rate limit.
	Rate *Rate `json:"rate,omitempty"`

	// Mode is how the room admits: "fifo" (first come, first served), "random" (any
	// waiter may be next), "passthrough" (everyone is admitted and counted),
	// "reject" (over capacity gets a "sold out, come back later" answer, nobody is
	// queued), "queue_all" (nobody new is admitted; the queue grows), "suspended" (the
	// room is off) or "invite_only" (only visitors with a valid pass queue or enter;
	// the rest get the reject answer; see docs/passes.md). Default: fifo.
	Mode string `json:"mode,omitempty"`

	// Events are scheduled openings (a sale, a ticket release), each with an optional
	// pre-queue, lottery, and its own capacity, rate and mode. They must not overlap.
	Events []Event `json:"events,omitempty"`

	// SessionTTL is how long an admitted visitor keeps the slot without making a
	// request. At least 10s. Default: 5m.
	SessionTTL caddy.Duration `json:"session_ttl,omitempty"`

	// SessionMax, when set, ends an admitted visitor's session this long after
	// admission however active the visitor is (a fixed shopping time). Their next
	// request makes them a new visitor, told that their time ran out; the slot frees at
	// SessionMax even if that request never comes. At least 10s. Default: off.
	SessionMax caddy.Duration `json:"session_max,omitempty"`

	// QueueTTL is how long a waiter counts as present without being heard from (page
	// load, poll or WebSocket). After that the waiter is away: the place is kept (see
	// AwayTTL) but counted nowhere and never admitted. At least 5s (two polls of a
	// page without a WebSocket). Default: 1m.
	QueueTTL caddy.Duration `json:"queue_ttl,omitempty"`

	// AwayTTL is how long a waiter who has gone quiet (a closed tab, a phone asleep, a
	// dropped network) keeps the place, counted from when last heard from. Coming back
	// in time, on any instance, the waiter is back at the same place in arrival order;
	// if the line passed that place meanwhile, the waiter goes in first. It must be at
	// least queue_ttl; 0 loses the place at queue_ttl. Only a waiter heard from after
	// joining (or invited with a pass) is kept: a place never heard from after its
	// first answer, as a cookie-less flood's are, is gone at queue_ttl. Default: 10m,
	// or queue_ttl if that is longer.
	AwayTTL *caddy.Duration `json:"away_ttl,omitempty"`

	// ArriveTTL is how long a waiter admitted from the queue has to arrive: to make a
	// request through the room (the page's own WebSocket is none). One who has not
	// gives the slot back, so the next waiter goes in, and keeps the turn once: coming
	// back within away_ttl after that with a request (the WebSocket alone is none),
	// the waiter goes in first (and the page says so); missing that turn too, or with
	// away_ttl 0, the turn is lost and the next request is a new visitor's, at the
	// back. A visitor admitted at once on arrival has arrived. 0 turns it off. At least 5s, and at least two polls of a page without
	// a WebSocket (11s with the default queue_ttl). Default: 30s.
	ArriveTTL *caddy.Duration `json:"arrive_ttl,omitempty"`

	// StatusCode is the HTTP status of the waiting page and its JSON twin: 200, 202,
	// 429 or 503. Default: 200. (The "temporarily unavailable" page is always 503.)
	StatusCode int `json:"status_code,omitempty"`

	// RejectStatusCode is the HTTP status of the "sold out, come back later" answer of
	// the reject mode: 200, 202, 429 or 503. Default: 503.
	RejectStatusCode int `json:"reject_status_code,omitempty"`

	// Fail says what happens to new visitors while the store cannot be reached: "open"
	// lets them through, "closed" shows the waiting page as temporarily unavailable.
	// Admitted visitors keep passing either way (their cookie is verified locally).
	// Default: open.
	Fail string `json:"fail,omitempty"`

	// Secret is the HMAC-SHA256 key that signs visitor cookies. Placeholders such as
	// {env.WAITING_ROOM_SECRET} are expanded; once expanded it must be at least 32
	// bytes, as must each previous secret. When empty, a random secret is generated
	// and kept in the store: across reloads with the memory store, and shared by every
	// instance with a shared store.
	Secret string `json:"secret,omitempty"`

	// PreviousSecrets are still accepted when verifying cookies (but never used to sign),
	// so that the secret can be rotated without sending admitted visitors back to the
	// queue.
	PreviousSecrets []string `json:"previous_secrets,omitempty"`

	// Template is the path of an html/template file that replaces the embedded waiting
	// page. It is parsed at provision time, so a broken template fails `caddy validate`.
	Template string `json:"template,omitempty"`

	// PerIP caps what one client address may do (new visitors per window, open
	// WebSockets). Off by default.
	PerIP *PerIP `json:"per_ip,omitempty"`

	// Lang fixes the waiting page's language for every visitor: one of en, ko, ja, zh
	// (Simplified Chinese), es, de, fr. Default: each visitor's Accept-Language picks
	// among them, and English is the fallback.
	Lang string `json:"lang,omitempty"`

	// Message is told to everyone in line (the page shows it, the JSON carries it):
	// plain text, at most 500 characters, such as "We open at 10:00". The admin API
	// can replace it at run time. Default: none.
	Message string `json:"message,omitempty"`

	// ProofOfWork is the difficulty, in leading zero bits of a SHA-256, of the proof
	// of work a new visitor must send before it may queue: the browser's page solves
	// it by itself (about 2^bits hashes), an API client gets the challenge as JSON.
	// 0 to 32; the admin API can change it at run time. Default: 0, off.
	ProofOfWork int `json:"proof_of_work,omitempty"`

	// Key is who a request is for, as a placeholder such as
	// {http.request.header.X-Account} (a header the shop or a trusted proxy sets) or
	// {http.auth.user.id} (an auth module's): every browser, tab and device whose
	// requests resolve it to one non-empty value holds one place, with one ticket,
	// and shares one admitted session. Where it resolves empty, the visitor is the
	// cookie's. It must hold a placeholder; a key longer than 512 bytes is refused
	// with a 400. The key is never stored: the visitor's id derives from it with the
	// room's secret. See docs/people-and-devices.md. Default: none, each browser is
	// its own visitor.
	Key string `json:"key,omitempty"`

	// Adapt turns on the adaptive capacity (see Adapt); Capacity is where it starts
	// and must lie within its min and max. The admin API can change it, or turn it
	// off, at run time. Default: off.
	Adapt *Adapt `json:"adapt,omitempty"`

	// DrawPage is the path of the room's public draw page (docs/fairness.md): its
	// draws' commitments, seeds and entrants, and its admissions by reason, which
	// every waiter's receipt points to. "off" turns the page and the receipts off.
	// It is answered before anything else, in every mode, and never sets a cookie
	// or counts anyone. Default: /.well-known/waiting-room/<name>.
	DrawPage string `json:"draw_page,omitempty"`

	// Cookie configures the visitor cookie.
	Cookie *token.Cookie `json:"cookie,omitempty"`

	// StoreRaw holds the room's state. Default: {"type": "memory"}.
	StoreRaw json.RawMessage `json:"store,omitempty" caddy:"namespace=http.handlers.waiting_room.stores inline_key=type"`

	store          queue.Store
	storeType      string // the store module's name, for the admin API
	releaseStore   func()
	releaseHistory func()
	room           *room.Room
	metrics        *roomMetrics
	page           *page.Writer // the operator's template, or the embedded page
	logger         *zap.Logger
	clock          room.Clock
	keyCheck       *room.KeyCheck // nil without a key
	// config is the Done channel of the config the handler was provisioned in: the
	// one thing every module of a loaded config shares and no other config does.
	config <-chan struct{}
	// cookieNamedAt is where the Caddyfile names the room's cookie (its cookie name
	// option, else its name), for the adapter's cookie-name check.
	cookieNamedAt string
	drawPage      string // the draw page's path, "" when off, as links give it
	drawPath      string // the same as a request's URL.Path has it (unescaped)
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.waiting_room",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Defaults for the optional settings.
const (
	defaultSessionTTL = 5 * time.Minute
	defaultQueueTTL   = time.Minute
	defaultAwayTTL    = 10 * time.Minute
	failOpen          = "open"
	failClosed        = "closed"
)

// Provision sets up the room. A store that is down does not fail it: the room starts
// degraded (as configured by Fail) and recovers when the store answers.
func (h *Handler) Provision(ctx caddy.Context) error {
	if h.logger == nil {
		h.logger = ctx.Logger() // tests may give a quiet one
	}
	if h.clock == nil {
		h.clock = room.SystemClock{}
	}
	if h.Key != "" {
		h.keyCheck = room.NewKeyCheck(h.Name, h.Key, h.logger)
	}
	cfg, err := h.EngineConfig()
	if err != nil {
		return err
	}
	h.config = ctx.Done()
	if err := checkCookieName(h); err != nil {
		return err
	}

	var unspliced error
	h.page, unspliced, err = page.NewWriter(h.Template, func(err error) {
		h.logger.Error("waiting page template failed; serving the embedded page",
			zap.String("room", h.Name), zap.String("template", h.Template), zap.Error(err))
	})
	if err != nil {
		return err
	}
	if unspliced != nil {
		// Not an error: the page is right, but each one costs a full template
		// execution (~100x a cached one), which an operator expecting a surge wants
		// to know.
		h.logger.Info("waiting page template is executed for every queued visitor",
			zap.String("room", h.Name), zap.String("template", h.Template), zap.String("reason", unspliced.Error()))
	}

	secrets, err := h.configuredSecrets()
	if err != nil {
		return err
	}

	if h.StoreRaw == nil {
		h.StoreRaw = json.RawMessage(`{"type":"memory"}`)
	}
	var storeType struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(h.StoreRaw, &storeType)
	h.storeType = storeType.Type
	mod, err := ctx.LoadModule(h, "StoreRaw")
	if err != nil {
		return fmt.Errorf("loading store: %w", err)
	}
	store, release, err := mod.(StoreModule).OpenStore(ctx, h.Name)
	if err != nil {
		return fmt.Errorf("opening store for room %q: %w", h.Name, err)
	}
	h.store, h.releaseStore = store, release

	m, err := newRoomMetrics(h.Name, ctx.GetMetricsRegistry())
	if err != nil {
		return err
	}
	h.metrics = m
	cfg.Page, cfg.Secrets, cfg.Store, cfg.StoreType = h.page, secrets, h.store, h.storeType
	cfg.Clock, cfg.Logger, cfg.Metrics, cfg.History = h.clock, h.logger, m, loadHistory(h.Name)
	cfg.Siblings = func() []*room.Room { return siblings(h.Name) }
	h.room = room.New(cfg)
	h.releaseHistory = func() { releaseHistory(h.Name) }
	h.room.Start(ctx)
	register(h)
	return nil
}

// EngineConfig fills in h's defaults, checks h as Validate does, and returns the
// room's configuration as the engine takes it: what the room runs with, but nothing
// of a running room (its store, page, secrets, clock, logger, metrics, history).
// Provision completes it and starts the room; `caddy waiting-room rehearse` plays a
// sale against it.
func (h *Handler) EngineConfig() (*room.Config, error) {
	h.setDefaults()
	if err := h.Validate(); err != nil {
		return nil, err
	}
	rt, _ := h.runtime() // checked by Validate
	cfg := &room.Config{
		Name:          h.Name,
		Config:        settings.Config{Runtime: rt, Events: engineEvents(h.Events)},
		FailOpen:      h.Fail == failOpen,
		Lang:          h.Lang,
		DrawPage:      h.drawPage,
		ParseDuration: caddy.ParseDuration,
	}
	if h.PerIP != nil {
		cfg.PerIP = h.PerIP.engine()
	}
	return cfg, nil
}

// setDefaults fills in the defaults of what the configuration leaves out.
func (h *Handler) setDefaults() {
	if h.SessionTTL == 0 {
		h.SessionTTL = caddy.Duration(defaultSessionTTL)
	}
	if h.QueueTTL == 0 {
		h.QueueTTL = caddy.Duration(defaultQueueTTL)
	}
	if h.AwayTTL == nil {
		away := caddy.Duration(max(defaultAwayTTL, time.Duration(h.QueueTTL)))
		h.AwayTTL = &away
	}
	if h.StatusCode == 0 {
		h.StatusCode = http.StatusOK
	}
	if h.RejectStatusCode == 0 {
		h.RejectStatusCode = http.StatusServiceUnavailable
	}
	if h.Fail == "" {
		h.Fail = failOpen
	}
	if h.Cookie == nil {
		h.Cookie = new(token.Cookie)
	}
	h.Cookie.SetDefaults(h.Name)
	if h.PerIP != nil && h.PerIP.JoinWindow == 0 {
		h.PerIP.JoinWindow = caddy.Duration(time.Minute)
	}
	h.drawPage, h.drawPath = page.DrawPaths(h.DrawPage, h.Name)
}

// runtime is the room's runtime settings (settings.Runtime) as configured, with the
// defaults Provision fills in: what Validate checks in one call, and the room starts
// with.
func (h *Handler) runtime() (settings.Runtime, error) {
	rt := settings.Runtime{
		Capacity:    h.Capacity,
		Mode:        cmp.Or(h.Mode, queue.ModeFIFO),
		SessionTTL:  cmp.Or(time.Duration(h.SessionTTL), defaultSessionTTL),
		QueueTTL:    h.queueTTL(),
		AwayTTL:     max(defaultAwayTTL, h.queueTTL()),
		SessionMax:  time.Duration(h.SessionMax),
		ArriveTTL:   h.arriveTTL(),
		Message:     h.Message,
		ProofOfWork: h.ProofOfWork,
	}
	if h.AwayTTL != nil {
		rt.AwayTTL = time.Duration(*h.AwayTTL)
	}
	if h.Rate != nil {
		rt.Rate = h.Rate.engine()
	}
	if h.Adapt != nil {
		var err error
		if rt.Adapt, err = h.Adapt.engine(h.Capacity); err != nil {
			return rt, err
		}
	}
	return rt, nil
}

// configuredSecrets expands the configured secrets; nil means "agree on one through the
// store" (the room does that, retrying while the store is down).
func (h *Handler) configuredSecrets() ([][]byte, error) {
	if h.Secret == "" {
		if len(h.PreviousSecrets) > 0 {
			return nil, errors.New("previous_secrets needs secret")
		}
		return nil, nil
	}
	return expandSecrets(append([]string{h.Secret}, h.PreviousSecrets...))
}

// expandSecrets expands the placeholders in the secret and previous secrets, and
// refuses one that is then empty or too short (token.CheckSecret).
func expandSecrets(configured []string) ([][]byte, error) {
	repl := caddy.NewReplacer()
	secrets := make([][]byte, len(configured))
	for i, s := range configured {
		what, v := "previous secret", repl.ReplaceKnown(s, "")
		if i == 0 {
			what = "secret"
		}
		if err := token.CheckSecret(what, s, v); err != nil {
			return nil, err
		}
		secrets[i] = []byte(v)
	}
	return secrets, nil
}

// Validate checks the configuration.
func (h *Handler) Validate() error {
	if h.Name == "" {
		return errors.New("name is required")
	}
	if h.Name == reservedName {
		return fmt.Errorf("name %q is reserved: the admin API serves its dashboard at /waiting_room/%s", h.Name, reservedName)
	}
	rt, err := h.runtime()
	if err != nil {
		return err
	}
	if err := settings.CheckRuntime(rt); err != nil {
		return err
	}
	if h.StatusCode != 0 {
		if _, err := page.ParseStatus("status_code", strconv.Itoa(h.StatusCode)); err != nil {
			return err
		}
	}
	if h.PerIP != nil {
		if err := room.CheckPerIP(h.PerIP.engine()); err != nil {
			return err
		}
	}
	if h.RejectStatusCode != 0 {
		if _, err := page.ParseStatus("reject_status_code", strconv.Itoa(h.RejectStatusCode)); err != nil {
			return err
		}
	}
	if h.Key != "" {
		if err := room.CheckKey(h.Key); err != nil {
			return err
		}
	}
	if err := settings.CheckEvents(engineEvents(h.Events)); err != nil {
		return err
	}
	if h.Fail != "" {
		if err := checkFail(h.Fail); err != nil {
			return err
		}
	}
	if h.Lang != "" {
		if err := page.CheckLang(h.Lang); err != nil {
			return err
		}
	}
	if h.DrawPage != "" {
		if err := page.CheckDrawPage(h.DrawPage); err != nil {
			return err
		}
	}
	if h.Cookie != nil {
		if err := h.Cookie.Validate(); err != nil {
			return fmt.Errorf("cookie: %w", err)
		}
	}
	return nil
}

// Cleanup stops the room (its goroutines end with the config's context), closes its
// WebSockets with a reconnect hint and lets go of the store. It is safe after a failed
// Provision and when called twice.
func (h *Handler) Cleanup() error {
	unregister(h)
	if h.room != nil {
		h.room.Stop()
	}
	if h.releaseHistory != nil {
		h.releaseHistory()
		h.releaseHistory = nil
	}
	if h.releaseStore != nil {
		h.releaseStore()
		h.releaseStore = nil
	}
	return nil
}

// reservedName is the one room name the admin API could not reach: its path is the
// dashboard's.
const reservedName = "dashboard"

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)

// checkFail refuses a fail that is neither open nor closed: the one message of the
// Caddyfile's line and the JSON config's validation.
func checkFail(fail string) error {
	if fail != failOpen && fail != failClosed {
		return fmt.Errorf("fail must be open or closed, got %q", fail)
	}
	return nil
}

// defaultArriveTTL is ArriveTTL's default: a connected page is told of its admission
// within a second and navigates at once, and one without a socket polls every few
// seconds, so an admitted waiter who has not come in 30 seconds is not looking.
const defaultArriveTTL = 30 * time.Second

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
