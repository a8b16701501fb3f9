package waitingroom

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/capacity"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("waiting_room", parseCaddyfile)
	// After `header` (site-wide security headers reach the waiting page too) and before
	// handle, route, auth, reverse_proxy, file_server and php_fastcgi, so that everything
	// behind it is protected.
	httpcaddyfile.RegisterDirectiveOrder("waiting_room", httpcaddyfile.Before, "basic_auth")
}

func parseCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	wr := new(Handler)
	if err := wr.UnmarshalCaddyfile(h.Dispenser); err != nil {
		return wr, err
	}
	return wr, claimCookieName(h.State, wr)
}

// cookieOwner is the room that first named a cookie in the Caddyfile, and where.
type cookieOwner struct{ room, at string }

// claimCookieName refuses a room whose cookie name another room of the Caddyfile has
// (checkCookieName says why), naming both rooms and both lines. state is the
// adapter's, shared by every directive of the Caddyfile.
func claimCookieName(state map[string]any, wr *Handler) error {
	const key = "waiting_room.cookie_names"
	owners, _ := state[key].(map[string]cookieOwner)
	if owners == nil {
		owners = map[string]cookieOwner{}
		state[key] = owners
	}
	var c token.Cookie
	if wr.Cookie != nil {
		c = *wr.Cookie
	}
	c.SetDefaults(wr.Name) // the name Provision will give it
	name := c.Name
	first, taken := owners[name]
	switch {
	case !taken:
		owners[name] = cookieOwner{room: wr.Name, at: wr.cookieNamedAt}
	case first.room != wr.Name:
		return fmt.Errorf("rooms %q and %q both use the cookie %q (at %s and %s): a visitor of one would lose the place in the other; give one its own cookie name (cookie { name ... })",
			wr.Name, first.room, name, wr.cookieNamedAt, first.at)
	}
	return nil
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	waiting_room [<matcher>] {
//		name        <name>
//		capacity    <n>
//		rate        <n> <duration>
//		mode        fifo|random|passthrough|reject|queue_all|suspended|invite_only
//		session_ttl <duration>
//		session_max <duration>
//		queue_ttl   <duration>
//		away_ttl    <duration>|0
//		arrive_ttl  <duration>|0
//		status_code 200|202|429|503
//		reject_status_code 200|202|429|503
//		fail        open|closed
//		secret      <string> [<previous>...]
//		template    <file>
//		lang        <tag>
//		message     <text>
//		proof_of_work <bits>
//		key         <placeholder>
//		draw_page   <path>|off
//		adapt {
//			latency <duration>
//			errors  <percent>
//			min     <n>
//			max     <n>
//		}
//		max_joins_per_ip       <n> [<window>]
//		max_connections_per_ip <n>
//		cookie {
//			name      <name>
//			domain    <domain>
//			path      <path>
//			same_site lax|strict|none
//			secure    [on|off]
//			http_only [on|off]
//		}
//		store memory | redis <url> { ... }
//		event <start> <end> {
//			prequeue <duration>
//			shuffle
//			capacity <n>
//			rate     <n> <duration>
//			mode     <mode>
//		}
//	}
//
// event may appear several times; start and end are RFC 3339 times. The block is
// docs/caddyfile.md's, which says each line's default (TestSyntaxBlockIsTheManuals).
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // directive name
	missingName := d.Err("waiting_room needs a name (add `name <name>` to the block)")
	missingCapacity := d.Err("waiting_room needs a capacity (add `capacity <n>` to the block)")
	if d.NextArg() {
		return d.ArgErr()
	}
	seen := map[string]bool{}
	var nameAt string                // the line of the room's name, where its default cookie name comes from
	var awayAt caddyfile.Dispenser   // the away_ttl line, where a contradiction with queue_ttl is told
	var arriveAt caddyfile.Dispenser // the arrive_ttl line, the same
	var adaptAt string               // the line of the adapt block, checked against the capacity
	for d.NextBlock(0) {
		sub := d.Val()
		if seen[sub] {
			return d.Errf("duplicate subdirective %q", sub)
		}
		if sub != "event" {
			seen[sub] = true
		}
		var err error
		switch sub {
		case "name":
			h.Name, err = oneArg(d)
			nameAt = where(d)
			if err == nil && h.Name == reservedName {
				err = d.Errf("name %q is reserved: the admin API serves its dashboard at /waiting_room/%s", h.Name, reservedName)
			}
		case "capacity":
			h.Capacity, err = positiveInt(d, "capacity")
		case "rate":
			h.Rate, err = parseRate(d)
		case "mode":
			h.Mode, err = checkedArg(d, settings.CheckMode)
		case "event":
			err = h.parseEvent(d)
		case "session_ttl":
			h.SessionTTL, err = timing(d, sub, false)
		case "session_max":
			h.SessionMax, err = timing(d, sub, false)
		case "queue_ttl":
			h.QueueTTL, err = timing(d, sub, false)
		case "away_ttl":
			var away caddy.Duration
			away, err = timing(d, sub, true)
			h.AwayTTL = &away
			awayAt = *d // checked against queue_ttl, which may come after
		case "arrive_ttl":
			var arrive caddy.Duration
			arrive, err = timing(d, sub, true)
			h.ArriveTTL = &arrive
			arriveAt = *d
		case "status_code":
			h.StatusCode, err = statusCode(d, sub)
		case "reject_status_code":
			h.RejectStatusCode, err = statusCode(d, sub)
		case "fail":
			h.Fail, err = checkedArg(d, checkFail)
		case "secret":
			args := d.RemainingArgs()
			if len(args) == 0 {
				return d.ArgErr()
			}
			// Adapted where Caddy runs (caddy run, caddy validate), so {env.*} reads
			// the environment the room will sign with; Provision checks again for
			// JSON configs.
			if _, err := expandSecrets(args); err != nil {
				return d.Err(err.Error())
			}
			h.Secret, h.PreviousSecrets = args[0], args[1:]
		case "template":
			h.Template, err = checkedArg(d, func(path string) error {
				_, _, err := page.NewWriter(path, nil) // a missing or broken file, on its line
				return err
			})
		case "max_joins_per_ip":
			err = h.parseMaxJoins(d)
		case "max_connections_per_ip":
			if h.PerIP == nil {
				h.PerIP = new(PerIP)
			}
			h.PerIP.MaxConnections, err = positiveInt(d, sub)
		case "lang":
			h.Lang, err = checkedArg(d, page.CheckLang)
		case "message":
			h.Message, err = checkedArg(d, settings.CheckMessage)
		case "proof_of_work":
			h.ProofOfWork, err = parseProofOfWork(d)
		case "key":
			h.Key, err = checkedArg(d, room.CheckKey)
		case "draw_page":
			h.DrawPage, err = checkedArg(d, page.CheckDrawPage)
		case "adapt":
			adaptAt = where(d)
			h.Adapt, err = parseAdapt(d)
		case "cookie":
			h.Cookie, err = parseCookie(d, &h.cookieNamedAt)
		case "store":
			err = h.parseStore(d)
		default:
			return d.Errf("unrecognized subdirective %q", sub)
		}
		if err != nil {
			return err
		}
	}
	if h.Name == "" {
		return missingName
	}
	if h.cookieNamedAt == "" {
		h.cookieNamedAt = nameAt
	}
	if h.Capacity == 0 {
		return missingCapacity
	}
	if a := h.AwayTTL; a != nil {
		if err := settings.CheckTimings(h.queueTTL(), time.Duration(*a)); err != nil {
			return awayAt.Err(err.Error())
		}
	}
	if a := h.ArriveTTL; a != nil {
		if err := settings.CheckArrive(h.queueTTL(), time.Duration(*a)); err != nil {
			return arriveAt.Err(err.Error())
		}
	}
	if h.Adapt != nil {
		return checkAdapt(h.Adapt, h.Capacity, adaptAt)
	}
	return nil
}

// parseMaxJoins reads `max_joins_per_ip <n> [<window>]`.
func (h *Handler) parseMaxJoins(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	if len(args) < 1 || len(args) > 2 {
		return d.ArgErr()
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n <= 0 {
		return d.Errf("max_joins_per_ip must be a whole number greater than 0, got %q", args[0])
	}
	if h.PerIP == nil {
		h.PerIP = new(PerIP)
	}
	h.PerIP.MaxJoins = n
	if len(args) == 2 {
		window, err := caddy.ParseDuration(args[1])
		if err != nil || window <= 0 {
			return d.Errf("bad window %q: want a positive duration such as 1m", args[1])
		}
		if err := settings.AtLeast("join_window", window, settings.MinWindow); err != nil {
			return d.Err(err.Error())
		}
		h.PerIP.JoinWindow = caddy.Duration(window)
	}
	return nil
}

func (h *Handler) parseStore(d *caddyfile.Dispenser) error {
	if !d.NextArg() {
		return d.ArgErr()
	}
	name := d.Val()
	unm, err := caddyfile.UnmarshalModule(d, "http.handlers.waiting_room.stores."+name)
	if err != nil {
		return err
	}
	h.StoreRaw = caddyconfig.JSONModuleObject(unm, "type", name, nil)
	return nil
}

func parseRate(d *caddyfile.Dispenser) (*Rate, error) {
	args := d.RemainingArgs()
	if len(args) != 2 {
		return nil, d.ArgErr()
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n <= 0 {
		return nil, d.Errf("rate count must be a whole number greater than 0, got %q", args[0])
	}
	per, err := caddy.ParseDuration(args[1])
	if err != nil || per <= 0 {
		return nil, d.Errf("bad rate window %q: want a positive duration such as 1s or 1m", args[1])
	}
	if err := settings.AtLeast("rate window", per, settings.MinWindow); err != nil {
		return nil, d.Err(err.Error())
	}
	return &Rate{Count: n, Per: caddy.Duration(per)}, nil
}

// checkedArg reads one argument that check accepts; its refusal is told on the line.
func checkedArg(d *caddyfile.Dispenser, check func(string) error) (string, error) {
	v, err := oneArg(d)
	if err != nil {
		return "", err
	}
	return v, lineErr(d, check(v))
}

// parseEvent reads `event <start> <end> { ... }` and checks it against the events
// before it, so a bad or overlapping event is reported with its line.
func (h *Handler) parseEvent(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	if len(args) != 2 {
		return d.Errf("event needs a start and an end (RFC 3339 times such as 2030-11-28T09:00:00Z)")
	}
	var ev Event
	for i, t := range []*time.Time{&ev.Start, &ev.End} {
		v, err := time.Parse(time.RFC3339, args[i])
		if err != nil {
			return d.Errf("bad event time %q: want RFC 3339 such as 2030-11-28T09:00:00Z or 2030-11-28T18:00:00+09:00", args[i])
		}
		*t = v
	}
	seen := map[string]bool{}
	for d.NextBlock(1) {
		sub := d.Val()
		if seen[sub] {
			return d.Errf("duplicate event option %q", sub)
		}
		seen[sub] = true
		var err error
		switch sub {
		case "prequeue":
			// Any pre-queue works, however short: no floor.
			ev.Prequeue, err = positiveDuration(d, sub)
		case "shuffle":
			if d.NextArg() {
				return d.ArgErr()
			}
			ev.Shuffle = true
		case "capacity":
			ev.Capacity, err = positiveInt(d, "event capacity")
		case "rate":
			ev.Rate, err = parseRate(d)
		case "mode":
			ev.Mode, err = checkedArg(d, settings.CheckMode)
		default:
			return d.Errf("unrecognized event option %q", sub)
		}
		if err != nil {
			return err
		}
	}
	h.Events = append(h.Events, ev)
	if err := settings.CheckEvents(engineEvents(h.Events)); err != nil {
		return d.Err(err.Error())
	}
	return nil
}

// parseCookie reads the cookie block; namedAt learns the line of its name option.
func parseCookie(d *caddyfile.Dispenser, namedAt *string) (*token.Cookie, error) {
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	c := new(token.Cookie)
	seen := map[string]bool{}
	for d.NextBlock(1) {
		sub := d.Val()
		if seen[sub] {
			return nil, d.Errf("duplicate cookie option %q", sub)
		}
		seen[sub] = true
		var err error
		switch sub {
		case "name":
			c.Name, err = oneArg(d)
			*namedAt = where(d)
			if err == nil && token.CookieSafe(c.Name) != c.Name {
				err = d.Errf("cookie name %q: only letters, digits, '-' and '_' are allowed", c.Name)
			}
		case "domain":
			c.Domain, err = oneArg(d)
		case "path":
			c.Path, err = oneArg(d)
			if err == nil && !strings.HasPrefix(c.Path, "/") {
				err = d.Errf("cookie path must start with '/', got %q", c.Path)
			}
		case "same_site":
			c.SameSite, err = oneArg(d)
			if err == nil {
				c.SameSite = strings.ToLower(c.SameSite)
				switch c.SameSite {
				case "lax", "strict", "none":
				default:
					err = d.Errf("same_site must be lax, strict or none, got %q", c.SameSite)
				}
			}
		case "secure":
			c.Secure, err = onOff(d)
		case "http_only":
			c.HTTPOnly, err = onOff(d)
		default:
			return nil, d.Errf("unrecognized cookie option %q", sub)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := c.Validate(); err != nil {
		return nil, d.Errf("cookie: %v", err)
	}
	return c, nil
}

func oneArg(d *caddyfile.Dispenser) (string, error) {
	if !d.NextArg() {
		return "", d.ArgErr()
	}
	v := d.Val()
	if d.NextArg() {
		return "", d.ArgErr()
	}
	return v, nil
}

func positiveInt(d *caddyfile.Dispenser, what string) (int, error) {
	s, err := oneArg(d)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, d.Errf("%s must be a whole number greater than 0, got %q", what, s)
	}
	return n, nil
}

// positiveDuration reads the setting name's duration, which must be positive.
func positiveDuration(d *caddyfile.Dispenser, name string) (caddy.Duration, error) {
	s, err := oneArg(d)
	if err != nil {
		return 0, err
	}
	v, err := caddy.ParseDuration(s)
	if err != nil || v <= 0 {
		return 0, d.Errf("%s: bad duration %q: want a positive duration such as 30s or 5m", name, s)
	}
	return caddy.Duration(v), nil
}

// where is the current token's place, as errors give it ("Caddyfile:12").
func where(d *caddyfile.Dispenser) string { return fmt.Sprintf("%s:%d", d.File(), d.Line()) }

// onOff reads an optional on/off argument; the bare option means on.
func onOff(d *caddyfile.Dispenser) (*bool, error) {
	v := true
	if d.NextArg() {
		switch d.Val() {
		case "on", "true":
		case "off", "false":
			v = false
		default:
			return nil, d.Errf("want on or off, got %q", d.Val())
		}
		if d.NextArg() {
			return nil, d.ArgErr()
		}
	}
	return &v, nil
}

// lineErr is err on the dispenser's line, nil for none.
func lineErr(d *caddyfile.Dispenser, err error) error {
	if err == nil {
		return nil
	}
	return d.Err(err.Error())
}

// parseProofOfWork reads `proof_of_work <bits>`.
func parseProofOfWork(d *caddyfile.Dispenser) (int, error) {
	s, err := oneArg(d)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, d.Errf("proof_of_work must be a whole number of bits from 0 (off) to %d, got %q", token.MaxDifficulty, s)
	}
	if err := settings.CheckProofOfWork(n); err != nil {
		return 0, d.Err(err.Error())
	}
	return n, nil
}

// parseAdapt reads the adapt block. Each option's error carries its line; what
// holds only with the room's capacity, which may come after the block, is checked by
// checkAdapt.
//
//	adapt {
//		latency <duration>
//		errors  <percent>
//		min     <n>
//		max     <n>
//	}
func parseAdapt(d *caddyfile.Dispenser) (*Adapt, error) {
	if d.NextArg() {
		return nil, d.Errf("adapt takes a block, not %q: adapt { latency 800ms }", d.Val())
	}
	a := new(Adapt)
	block := d.Nesting()
	seen := map[string]bool{}
	for d.NextBlock(block) {
		sub := d.Val()
		if seen[sub] {
			return nil, d.Errf("duplicate adapt option %q", sub)
		}
		seen[sub] = true
		var err error
		switch sub {
		case "latency":
			a.Latency, err = positiveDuration(d, "adapt latency")
			if err == nil && time.Duration(a.Latency) > 30*24*time.Hour {
				err = d.Errf("adapt latency must be at most 720h, got %v", time.Duration(a.Latency))
			}
		case "errors":
			a.Errors, err = oneArg(d)
			if err == nil {
				var share float64
				if share, err = capacity.ParseShare(a.Errors); err != nil {
					err = d.Errf("adapt errors: %v", err)
				} else if share < 0 || share > 1 {
					err = d.Errf("adapt errors must be a percentage from 0%% to 100%%, got %s", a.Errors)
				}
			}
		case "min":
			a.Min, err = positiveInt(d, "adapt min")
		case "max":
			a.Max, err = positiveInt(d, "adapt max")
		default:
			return nil, d.Errf("unrecognized adapt option %q (the options are latency, errors, min and max)", sub)
		}
		if err != nil {
			return nil, err
		}
	}
	if a.Latency == 0 {
		return nil, d.Err("adapt needs a latency target (add `latency <duration>`, such as latency 800ms, to the block)")
	}
	return a, nil
}

// checkAdapt checks the adapt block against the room's capacity, which the block may
// come before; the error points at the block's line, at, as the parser's errors do.
func checkAdapt(a *Adapt, capacity int, at string) error {
	if _, err := a.engine(capacity); err != nil {
		return fmt.Errorf("%w, at %s", err, at)
	}
	return nil
}

// statusCode reads the status what names (page.ParseStatus).
func statusCode(d *caddyfile.Dispenser, what string) (int, error) {
	s, err := oneArg(d)
	if err != nil {
		return 0, err
	}
	n, err := page.ParseStatus(what, s)
	return n, lineErr(d, err)
}

// timing reads the timing name's duration, one the room can keep
// (settings.CheckTiming); off says the Caddyfile writes 0 for off.
func timing(d *caddyfile.Dispenser, name string, off bool) (caddy.Duration, error) {
	s, err := oneArg(d)
	if err != nil {
		return 0, err
	}
	v, err := caddy.ParseDuration(s)
	if err != nil || v < 0 || v == 0 && !off {
		want := "a positive duration such as 30s or 5m"
		if off {
			want = "0 or a positive duration such as 10m"
		}
		return 0, d.Errf("%s: bad duration %q: want %s", name, s, want)
	}
	return caddy.Duration(v), lineErr(d, settings.CheckTiming(name, v))
}
