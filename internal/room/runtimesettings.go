package room

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// A runtime setting is one the admin API can change while the room runs. Each is
// defined here once: its name, how a PATCH value parses, how it is checked (the
// Check functions below, whose messages the Caddyfile, the JSON config's validation
// and PATCH all give), how its override applies and how the admin API shows it (the
// Overrides field's JSON). Adding one touches this file, the Overrides struct, the
// module's config field and Caddyfile option, and the docs.
type runtimeSetting struct {
	name string
	// patch reads a PATCH value into o; "null" restores the configured value.
	patch func(rm *Room, o *Overrides, raw json.RawMessage) error
	// apply lets o's value, if any, win in s.
	apply func(s *Settings, o *Overrides)
}

// runtimeSettings in the order the admin API's errors list them.
var runtimeSettings = []runtimeSetting{
	{name: "capacity",
		patch: func(_ *Room, o *Overrides, raw json.RawMessage) error {
			return patchValue(&o.Capacity, "capacity", "a whole number", raw, CheckCapacity)
		},
		apply: func(s *Settings, o *Overrides) {
			if o.Capacity != nil {
				s.Capacity = *o.Capacity
			}
		}},
	{name: "rate",
		patch: func(rm *Room, o *Overrides, raw json.RawMessage) error { return rm.patchRate(o, raw) },
		apply: func(s *Settings, o *Overrides) {
			if o.Rate != nil {
				s.Rate = *o.Rate
			}
		}},
	{name: "mode",
		patch: func(_ *Room, o *Overrides, raw json.RawMessage) error {
			return patchValue(&o.Mode, "mode", "a string", raw, CheckMode)
		},
		apply: func(s *Settings, o *Overrides) {
			if o.Mode != nil {
				// The operator's lever wins over a pre-queue too (say, suspending the room).
				s.Mode, s.Prequeue = *o.Mode, false
			}
		}},
	{name: "message",
		// null clears the override (the configured message, if any, shows again); ""
		// shows none.
		patch: func(_ *Room, o *Overrides, raw json.RawMessage) error {
			return patchValue(&o.Message, "message", "a string", raw, CheckMessage)
		},
		apply: func(s *Settings, o *Overrides) {
			if o.Message != nil {
				s.Message = *o.Message
			}
		}},
	timing("session_ttl", func(o *Overrides) **Period { return &o.SessionTTL }, func(s *Settings) *time.Duration { return &s.SessionTTL }),
	timing("queue_ttl", func(o *Overrides) **Period { return &o.QueueTTL }, func(s *Settings) *time.Duration { return &s.QueueTTL }),
	timing("away_ttl", func(o *Overrides) **Period { return &o.AwayTTL }, func(s *Settings) *time.Duration { return &s.AwayTTL }),
	timing("session_max", func(o *Overrides) **Period { return &o.SessionMax }, func(s *Settings) *time.Duration { return &s.SessionMax }),
	timing("arrive_ttl", func(o *Overrides) **Period { return &o.ArriveTTL }, func(s *Settings) *time.Duration { return &s.ArriveTTL }),
	{name: "proof_of_work",
		patch: func(_ *Room, o *Overrides, raw json.RawMessage) error {
			return patchValue(&o.ProofOfWork, "proof_of_work", "a whole number", raw, CheckProofOfWork)
		},
		apply: func(s *Settings, o *Overrides) {
			if o.ProofOfWork != nil {
				s.ProofOfWork = *o.ProofOfWork
			}
		}},
	adaptSetting, // adapt.go
}

// runtimeSettingNames lists the names for the error of an unknown field.
func runtimeSettingNames() string {
	names := make([]string, len(runtimeSettings))
	for i, def := range runtimeSettings {
		names[i] = def.name
	}
	return strings.Join(names, ", ")
}

// runtimeSettingNamed is the setting of that name, if any.
func runtimeSettingNamed(name string) (runtimeSetting, bool) {
	for _, def := range runtimeSettings {
		if def.name == name {
			return def, true
		}
	}
	return runtimeSetting{}, false
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
	if queue.CheckMode(m) != nil {
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
	switch {
	case d < 0 || d == 0 && name != "away_ttl" && name != "session_max" && name != "arrive_ttl":
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

// checkTimings refuses overrides under which the timings contradict each other.
func (rm *Room) checkTimings(o *Overrides) error {
	s := settingsAt(rm.cfg, *o, rm.cfg.Clock.Now())
	if err := CheckTimings(s.QueueTTL, s.AwayTTL); err != nil {
		return inputError{err}
	}
	if err := CheckArrive(s.QueueTTL, s.ArriveTTL); err != nil {
		return inputError{err}
	}
	return nil
}

// timingFloors are the least each timing takes (floors.go); away_ttl's is queue_ttl,
// which CheckTimings holds.
var timingFloors = map[string]time.Duration{"session_ttl": MinSessionTTL, "queue_ttl": MinQueueTTL, "session_max": MinSessionMax,
	"arrive_ttl": MinArriveTTL}

// timing defines a duration setting: a duration string sets it, null restores the
// configured value; session_max also takes "off".
func timing(name string, field func(*Overrides) **Period, value func(*Settings) *time.Duration) runtimeSetting {
	return runtimeSetting{
		name: name,
		patch: func(rm *Room, o *Overrides, raw json.RawMessage) error {
			f := field(o)
			if string(raw) == "null" {
				*f = nil
				return nil
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return inputErrorf("%s must be a duration string such as \"5m\", or null, got %s", name, clip(raw))
			}
			if name == "session_max" && s == "off" {
				off := Period(0)
				*f = &off
				return nil
			}
			d, err := rm.cfg.ParseDuration(s)
			if err != nil {
				return inputErrorf("%s: bad duration %q: want a duration such as 30s or 5m", name, clip([]byte(s)))
			}
			if name == "session_max" && d == 0 {
				return inputErrorf("session_max must be greater than 0 (\"off\" turns it off), got %q", clip([]byte(s)))
			}
			if err := CheckTiming(name, d); err != nil {
				return inputError{err}
			}
			p := Period(d)
			*f = &p
			return nil
		},
		apply: func(s *Settings, o *Overrides) {
			if p := *field(o); p != nil {
				*value(s) = time.Duration(*p)
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
		return inputErrorf("%s must be %s or null, got %s", name, want, clip(raw))
	}
	if err := check(v); err != nil {
		return inputError{err}
	}
	*field = &v
	return nil
}

// patchRate reads a PATCH's rate: null restores the configured rate, "off" lifts the
// limit, {"count": n, "per": "1m"} sets one.
func (rm *Room) patchRate(o *Overrides, raw json.RawMessage) error {
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
	bad := inputErrorf(`rate must be {"count": n, "per": "1m"}, "off" or null, got %s`, clip(raw))
	if dec.Decode(&in) != nil {
		return bad
	}
	rate := Rate{Count: in.Count}
	if len(in.Per) > 0 && string(in.Per) != "null" {
		d, err := rm.readDuration(in.Per)
		if err != nil {
			return bad
		}
		rate.Per = d
	}
	if err := CheckRate(rate); err != nil {
		return inputError{err}
	}
	o.Rate = &rate
	return nil
}

// readDuration reads a duration as the configuration does: a string such as "1m" or
// "1d", or a number of nanoseconds.
func (rm *Room) readDuration(raw json.RawMessage) (time.Duration, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return rm.cfg.ParseDuration(s)
	}
	var ns int64
	if err := json.Unmarshal(raw, &ns); err != nil {
		return 0, err
	}
	return time.Duration(ns), nil
}
