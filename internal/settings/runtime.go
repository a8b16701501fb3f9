package settings

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/capacity"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// Runtime are the settings the admin API can change while the room runs. They are
// part of the room's Config (what it is configured with) and of each Snapshot (what
// is in force), and the admin API shows the configured ones as its `configured`
// object, as MarshalJSON writes them.
//
// Each is defined once: its field here and its entry in runtimeSettings below, which
// holds its name, its check (with its one message, which the Caddyfile, the JSON
// config's validation and PATCH all give), its PATCH, how its override applies and
// how it is shown. Adding one touches four Go files: this one, the Overrides field
// (overrides.go), the module's config field and its mapping into Runtime
// (waitingroom/waitingroom.go), and the Caddyfile option (waitingroom/caddyfile.go);
// TestEveryRuntimeSettingIsDefinedOnce (waitingroom) fails while one is missing.
type Runtime struct {
	Capacity int
	Rate     Rate // zero: no rate limit
	Mode     string

	SessionTTL time.Duration
	QueueTTL   time.Duration
	AwayTTL    time.Duration // 0: a place is lost at queue_ttl
	SessionMax time.Duration // 0: off
	ArriveTTL  time.Duration // 0: off (internal/room/arrive.go)

	// Message is told to the line; ProofOfWork is the difficulty a new visitor's
	// proof must meet, 0 when off.
	Message     string
	ProofOfWork int
	// Adapt turns the adaptive capacity on (nil: off), Capacity being where it
	// starts; in a Snapshot, while it is on, Capacity is the one it chose.
	Adapt *capacity.Targets
}

// A runtime setting is one the admin API can change while the room runs (Runtime).
type runtimeSetting struct {
	name string
	// check refuses r's value of the setting, if the room cannot run it.
	check func(r *Runtime) error
	// patch reads a PATCH value into o; "null" restores the configured value. Its
	// errors are the caller's mistakes.
	patch func(p *Patching, o *Overrides, raw json.RawMessage) error
	// apply lets o's value, if any, win in s.
	apply func(s *Snapshot, o *Overrides)
	// show is r's value as the admin API writes it.
	show func(r *Runtime) any
}

// MarshalJSON writes r as the admin API shows it: each setting by its name, in the
// table's order.
func (r Runtime) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, def := range runtimeSettings {
		v, err := json.Marshal(def.show(&r))
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:%s", def.name, v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// CheckRuntime refuses runtime settings the room cannot run: each setting's check,
// then the rules between them.
func CheckRuntime(r Runtime) error {
	for _, def := range runtimeSettings {
		if err := def.check(&r); err != nil {
			return err
		}
	}
	if err := CheckTimings(r.QueueTTL, r.AwayTTL); err != nil {
		return err
	}
	return CheckArrive(r.QueueTTL, r.ArriveTTL)
}

// runtimeSettings in the order the admin API's errors list them.
var runtimeSettings = []runtimeSetting{
	{name: "capacity",
		check: func(r *Runtime) error { return CheckCapacity(r.Capacity) },
		patch: func(_ *Patching, o *Overrides, raw json.RawMessage) error {
			return patchValue(&o.Capacity, "capacity", "a whole number", raw, CheckCapacity)
		},
		apply: func(s *Snapshot, o *Overrides) {
			if o.Capacity != nil {
				s.Capacity = *o.Capacity
			}
		},
		show: func(r *Runtime) any { return r.Capacity }},
	{name: "rate",
		check: func(r *Runtime) error {
			if r.Rate == (Rate{}) {
				return nil // no limit
			}
			return CheckRate(r.Rate)
		},
		patch: func(p *Patching, o *Overrides, raw json.RawMessage) error { return p.rate(o, raw) },
		apply: func(s *Snapshot, o *Overrides) {
			if o.Rate != nil {
				s.Rate = *o.Rate
			}
		},
		show: func(r *Runtime) any {
			if !r.Rate.Limits() {
				return nil
			}
			return r.Rate
		}},
	{name: "mode",
		check: func(r *Runtime) error {
			if r.Mode == "" {
				return nil // fifo
			}
			return CheckMode(r.Mode)
		},
		patch: func(_ *Patching, o *Overrides, raw json.RawMessage) error {
			return patchValue(&o.Mode, "mode", "a string", raw, CheckMode)
		},
		apply: func(s *Snapshot, o *Overrides) {
			if o.Mode != nil {
				// The operator's lever wins over a pre-queue too (say, suspending the room).
				s.Mode, s.Prequeue = *o.Mode, false
			}
		},
		show: func(r *Runtime) any { return cmp.Or(r.Mode, queue.ModeFIFO) }},
	timing("session_ttl", func(o *Overrides) **Period { return &o.SessionTTL }, func(r *Runtime) *time.Duration { return &r.SessionTTL }),
	timing("queue_ttl", func(o *Overrides) **Period { return &o.QueueTTL }, func(r *Runtime) *time.Duration { return &r.QueueTTL }),
	timing("away_ttl", func(o *Overrides) **Period { return &o.AwayTTL }, func(r *Runtime) *time.Duration { return &r.AwayTTL }),
	timing("session_max", func(o *Overrides) **Period { return &o.SessionMax }, func(r *Runtime) *time.Duration { return &r.SessionMax }),
	timing("arrive_ttl", func(o *Overrides) **Period { return &o.ArriveTTL }, func(r *Runtime) *time.Duration { return &r.ArriveTTL }),
	{name: "message",
		check: func(r *Runtime) error { return CheckMessage(r.Message) },
		// null clears the override (the configured message, if any, shows again); ""
		// shows none.
		patch: func(_ *Patching, o *Overrides, raw json.RawMessage) error {
			return patchValue(&o.Message, "message", "a string", raw, CheckMessage)
		},
		apply: func(s *Snapshot, o *Overrides) {
			if o.Message != nil {
				s.Message = *o.Message
			}
		},
		show: func(r *Runtime) any { return r.Message }},
	{name: "proof_of_work",
		check: func(r *Runtime) error { return CheckProofOfWork(r.ProofOfWork) },
		patch: func(_ *Patching, o *Overrides, raw json.RawMessage) error {
			return patchValue(&o.ProofOfWork, "proof_of_work", "a whole number", raw, CheckProofOfWork)
		},
		apply: func(s *Snapshot, o *Overrides) {
			if o.ProofOfWork != nil {
				s.ProofOfWork = *o.ProofOfWork
			}
		},
		show: func(r *Runtime) any { return r.ProofOfWork }},
	adaptSetting, // adapt.go
}

// RuntimeSettings are the runtime settings' names, in the admin API's order.
func RuntimeSettings() []string {
	names := make([]string, len(runtimeSettings))
	for i, def := range runtimeSettings {
		names[i] = def.name
	}
	return names
}

// Patching is what a PATCH's values are read against.
type Patching struct {
	// Config is the room's configuration, and InForce the snapshot in force.
	Config  *Config
	InForce *Snapshot
	// ParseDuration reads durations as the configuration reads them.
	ParseDuration func(string) (time.Duration, error)
}

// Patch reads a PATCH's fields (each setting's JSON by its name) into the overrides
// they set: a value sets it, null restores the configured one. The fields are read in
// name order, so that a body with several bad fields is refused for the same one
// every time. Every error is the caller's mistake, and then nothing is to change.
func (p *Patching) Patch(fields map[string]json.RawMessage) (Overrides, error) {
	var o Overrides
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		i := slices.IndexFunc(runtimeSettings, func(def runtimeSetting) bool { return def.name == name })
		if i < 0 {
			return Overrides{}, fmt.Errorf("unknown field %q (the fields are: %s)", clip([]byte(name)), strings.Join(RuntimeSettings(), ", "))
		}
		if err := runtimeSettings[i].patch(p, &o, fields[name]); err != nil {
			return Overrides{}, err
		}
	}
	return o, nil
}

// CheckCapacity refuses a capacity that admits nobody.
func CheckCapacity(n int) error {
	if n <= 0 {
		return fmt.Errorf("capacity must be greater than 0, got %d", n)
	}
	return nil
}

// CheckRate refuses a rate that limits to nothing or to a window the room cannot keep.
func CheckRate(r Rate) error {
	if r.Count <= 0 {
		return fmt.Errorf("rate count must be greater than 0, got %d", r.Count)
	}
	if r.Per <= 0 {
		return fmt.Errorf("rate window must be a positive duration, got %v", r.Per)
	}
	return AtLeast("rate window", r.Per, MinWindow)
}

// CheckMode refuses a mode the room does not have.
func CheckMode(m string) error {
	if !queue.KnownMode(m) {
		return fmt.Errorf("mode must be one of %s, got %q", strings.Join(queue.Modes, ", "), clip([]byte(m)))
	}
	return nil
}

// CheckProofOfWork refuses a difficulty outside what a browser can solve and a token
// can hold.
func CheckProofOfWork(bits int) error {
	if bits < 0 || bits > token.MaxDifficulty {
		return fmt.Errorf("proof_of_work must be a number of bits from 0 (off) to %d, got %d", token.MaxDifficulty, bits)
	}
	return nil
}

// maxTiming bounds the timings: a month is beyond any sale, and below the 49 days the
// Redis store's 32-bit heard times span.
const maxTiming = 30 * 24 * time.Hour

// CheckTiming refuses a session_ttl, queue_ttl, away_ttl, session_max or arrive_ttl
// the room cannot keep: below its floor (floors.go), beyond maxTiming, or negative. 0
// is off for session_max and arrive_ttl and "lose the place at queue_ttl" for
// away_ttl; the others need a value.
func CheckTiming(name string, d time.Duration) error {
	off := name == "away_ttl" || name == "session_max" || name == "arrive_ttl" // 0 is off
	switch {
	case d < 0 && off:
		return fmt.Errorf("%s must be 0 (off) or a positive duration, got %v", name, d)
	case d < 0 || d == 0 && !off:
		return fmt.Errorf("%s must be greater than 0, got %v", name, d)
	case d > maxTiming:
		return fmt.Errorf("%s must be at most %v, got %v", name, maxTiming, d)
	case d == 0:
		return nil
	}
	return AtLeast(name, d, timingFloors[name])
}

// CheckTimings refuses timings that contradict each other.
func CheckTimings(queueTTL, awayTTL time.Duration) error {
	if awayTTL < 0 || awayTTL > 0 && awayTTL < queueTTL {
		return fmt.Errorf("away_ttl (%v) must be 0 or at least queue_ttl (%v): a quiet waiter is kept at least as long as a present one",
			awayTTL, queueTTL)
	}
	return nil
}

// timingFloors are the least each timing takes (floors.go); away_ttl's is queue_ttl,
// which CheckTimings holds.
var timingFloors = map[string]time.Duration{"session_ttl": MinSessionTTL, "queue_ttl": MinQueueTTL, "session_max": MinSessionMax,
	"arrive_ttl": MinArriveTTL}

// timing defines a duration setting: a duration string sets it, null restores the
// configured value; session_max also takes "off".
func timing(name string, field func(*Overrides) **Period, value func(*Runtime) *time.Duration) runtimeSetting {
	return runtimeSetting{
		name:  name,
		check: func(r *Runtime) error { return CheckTiming(name, *value(r)) },
		show: func(r *Runtime) any {
			if d := *value(r); d == 0 && name == "session_max" {
				return "" // off
			}
			return value(r).String()
		},
		patch: func(p *Patching, o *Overrides, raw json.RawMessage) error {
			f := field(o)
			if string(raw) == "null" {
				*f = nil
				return nil
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return fmt.Errorf("%s must be a duration string such as \"5m\", or null, got %s", name, clip(raw))
			}
			if name == "session_max" && s == "off" {
				off := Period(0)
				*f = &off
				return nil
			}
			d, err := p.ParseDuration(s)
			if err != nil {
				return fmt.Errorf("%s: bad duration %q: want a duration such as 30s or 5m", name, clip([]byte(s)))
			}
			if name == "session_max" && d == 0 {
				return fmt.Errorf("session_max must be greater than 0 (\"off\" turns it off), got %q", clip([]byte(s)))
			}
			if err := CheckTiming(name, d); err != nil {
				return err
			}
			v := Period(d)
			*f = &v
			return nil
		},
		apply: func(s *Snapshot, o *Overrides) {
			if p := *field(o); p != nil {
				*value(&s.Runtime) = time.Duration(*p)
			}
		},
	}
}

// patchValue reads a setting's PATCH value of type T, described as want in the
// error, and checked by check; null restores the configured value.
func patchValue[T any](field **T, name, want string, raw json.RawMessage, check func(T) error) error {
	if string(raw) == "null" {
		*field = nil
		return nil
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("%s must be %s or null, got %s", name, want, clip(raw))
	}
	if err := check(v); err != nil {
		return err
	}
	*field = &v
	return nil
}

// rate reads a PATCH's rate: null restores the configured rate, "off" lifts the
// limit, {"count": n, "per": "1m"} sets one.
func (p *Patching) rate(o *Overrides, raw json.RawMessage) error {
	switch string(raw) {
	case "null":
		o.Rate = nil
		return nil
	case `"off"`:
		o.Rate = &Rate{}
		return nil
	}
	var in struct {
		Count int             `json:"count"`
		Per   json.RawMessage `json:"per"`
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	bad := fmt.Errorf(`rate must be {"count": n, "per": "1m"}, "off" or null, got %s`, clip(raw))
	if dec.Decode(&in) != nil {
		return bad
	}
	rate := Rate{Count: in.Count}
	if len(in.Per) > 0 && string(in.Per) != "null" {
		d, err := p.readDuration(in.Per)
		if err != nil {
			return bad
		}
		rate.Per = d
	}
	if err := CheckRate(rate); err != nil {
		return err
	}
	o.Rate = &rate
	return nil
}

// readDuration reads a duration as the configuration does: a string such as "1m" or
// "1d", or a number of nanoseconds.
func (p *Patching) readDuration(raw json.RawMessage) (time.Duration, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return p.ParseDuration(s)
	}
	var ns int64
	if err := json.Unmarshal(raw, &ns); err != nil {
		return 0, err
	}
	return time.Duration(ns), nil
}
