package room

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/capacity"
)

// AdaptOverride is the admin API's change to adapt: new targets, or Off. Kept with
// the runtime settings as the targets' object, or "off".
type AdaptOverride struct {
	Off     bool
	Targets capacity.Targets
}

// MarshalJSON writes "off" or the targets.
func (o AdaptOverride) MarshalJSON() ([]byte, error) {
	if o.Off {
		return []byte(`"off"`), nil
	}
	return json.Marshal(o.Targets)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (o *AdaptOverride) UnmarshalJSON(b []byte) error {
	if string(b) == `"off"` {
		*o = AdaptOverride{Off: true}
		return nil
	}
	*o = AdaptOverride{}
	return json.Unmarshal(b, &o.Targets)
}

// adaptSetting is adapt as a runtime setting. A PATCH of an object changes the
// fields it names and keeps the others as they are in force (or, when adapt is off,
// as configured, or the defaults); null or "off" turns adapt off at the capacity in force (see
// adaptMerge). Its apply comes after capacity's: the controller's capacity, when
// there is one, wins over the operator's, which a PATCH of capacity clears.
var adaptSetting = runtimeSetting{
	name: "adapt",
	check: func(r *Runtime) error {
		if r.Adapt == nil {
			return nil
		}
		return capacity.Check(*r.Adapt, r.Capacity)
	},
	show: func(r *Runtime) any { return r.Adapt },
	patch: func(rm *Room, o *Overrides, raw json.RawMessage) error {
		if string(raw) == "null" || string(raw) == `"off"` {
			o.Adapt = &AdaptOverride{Off: true}
			return nil
		}
		var in struct {
			Latency *json.RawMessage `json:"latency"`
			Errors  *json.RawMessage `json:"errors"`
			Min     *int             `json:"min"`
			Max     *int             `json:"max"`
		}
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		if dec.Decode(&in) != nil {
			return inputErrorf(`adapt must be an object of any of "latency", "errors", "min" and "max" (such as {"latency": "800ms"}), or null to turn it off, got %s`, clip(raw))
		}
		// The snapshot in force (not Settings(now), which would make this table refer
		// to itself through settingsAt).
		s := rm.settings.Load()
		a, known := capacity.Targets{Errors: capacity.DefaultErrors}, true
		switch {
		case s.Adapt != nil:
			a = *s.Adapt
		case rm.cfg.Adapt != nil:
			a = *rm.cfg.Adapt
		default:
			known = false
		}
		if in.Latency != nil {
			d, err := rm.readDuration(*in.Latency)
			if err != nil {
				return inputErrorf("adapt latency must be a duration string such as \"800ms\", got %s", clip(*in.Latency))
			}
			a.Latency = d
		}
		if in.Errors != nil {
			var text string
			if json.Unmarshal(*in.Errors, &text) != nil {
				return inputErrorf("adapt errors must be a percentage string such as \"2%%\", got %s", clip(*in.Errors))
			}
			share, err := capacity.ParseShare(text)
			if err != nil {
				return inputErrorf("adapt errors: %v", err)
			}
			a.Errors = share
		}
		for _, b := range []struct {
			name  string
			given *int
			field *int
		}{{"min", in.Min, &a.Min}, {"max", in.Max, &a.Max}} {
			if b.given == nil {
				continue
			}
			if *b.given < 1 {
				return inputErrorf("adapt %s must be at least 1, got %d", b.name, *b.given)
			}
			*b.field = *b.given
		}
		if !known && in.Latency == nil {
			return inputErrorf(`adapt is off: turning it on needs a "latency" target, such as {"latency": "800ms"}`)
		}
		if !known {
			a = a.WithDefaults(s.Capacity)
		}
		// The capacity in force is clamped into new bounds, not refused by them.
		if err := capacity.Check(a, 0); err != nil {
			return inputError{err}
		}
		o.Adapt = &AdaptOverride{Targets: a}
		return nil
	},
	apply: func(s *Settings, o *Overrides) {
		if o.Adapt != nil {
			s.Adapt = nil
			if !o.Adapt.Off {
				t := o.Adapt.Targets
				s.Adapt = &t
			}
		}
		if s.Adapt == nil {
			return
		}
		if o.Adapted != nil {
			s.Capacity = o.Adapted.Capacity
		}
		s.Capacity = min(max(s.Capacity, s.Adapt.Min), s.Adapt.Max)
	},
}

// adaptMerge carries a PATCH's meaning for the controller into the merged runtime
// settings (old is what they were): a capacity the operator sets is where the
// controller continues from, so its last decision goes; turning adapt off keeps the
// capacity in force, as the operator's, unless the PATCH names one.
func (rm *Room) adaptMerge(fields map[string]json.RawMessage, patch *Overrides, old Overrides, merged map[string]json.RawMessage) {
	if _, ok := fields["capacity"]; ok {
		delete(merged, "adapted")
	}
	if _, ok := fields["adapt"]; !ok || patch.Adapt == nil || !patch.Adapt.Off {
		return
	}
	if _, ok := fields["capacity"]; !ok {
		merged["capacity"], _ = json.Marshal(settingsAt(rm.cfg, old, rm.cfg.Clock.Now()).Capacity)
	}
	delete(merged, "adapted")
}

// AdaptInfo is adapt as the admin API shows it: the targets in force, and the
// controller's last decision (null fields until it made one).
type AdaptInfo struct {
	Latency string `json:"latency"`
	Errors  string `json:"errors"`
	Min     int    `json:"min"`
	Max     int    `json:"max"`
	// P90, ErrorShare and Requests are what the last control period measured,
	// fleet-wide; Capacity is what the controller chose from them, and Reason why.
	P90        *string `json:"p90"`
	ErrorShare *string `json:"error_share"`
	Requests   *uint64 `json:"requests"`
	Capacity   *int    `json:"capacity"`
	Reason     *string `json:"reason"`
	// DecidedAt is when the period decided on ended.
	DecidedAt *time.Time `json:"decided_at"`
	// PeriodSeconds is the control period's length.
	PeriodSeconds float64 `json:"period_seconds"`
}

// adaptInfo shows s's adapt with the last decision d (nil: none yet); nil when off.
func adaptInfo(s *Settings, d *capacity.Decision) *AdaptInfo {
	if s.Adapt == nil {
		return nil
	}
	a := s.Adapt
	info := &AdaptInfo{Latency: a.Latency.String(), Errors: capacity.FormatShare(a.Errors), Min: a.Min, Max: a.Max,
		PeriodSeconds: capacity.ControlPeriod.Seconds()}
	if d != nil {
		p90 := capacity.RoundP90(d.MeasuredP90()).String()
		share := capacity.ShownShare(capacity.Reading{Requests: d.Requests, Failed: d.Failed}.ErrorShare())
		at := capacity.PeriodStart(d.Period + 1).UTC()
		info.P90, info.ErrorShare, info.Requests, info.Capacity, info.Reason, info.DecidedAt =
			&p90, &share, &d.Requests, &d.Capacity, &d.Reason, &at
	}
	return info
}
