package room

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Adapt are the adaptive capacity's targets and bounds: the room sets its capacity
// from the shop's own answers to keep the shop's p90 time to first byte under Latency
// and its share of failed requests under Errors, never below Min nor above Max.
type Adapt struct {
	Latency time.Duration
	Errors  float64 // a share, 0.02 for 2 %
	Min     int
	Max     int
}

// The defaults of the fields an adapt block may leave out; Max's is
// defaultAdaptMaxFactor × capacity.
const (
	DefaultAdaptErrors    = 0.05
	DefaultAdaptMin       = 1
	defaultAdaptMaxFactor = 10
)

// WithDefaults fills in the bounds a leaves out (0), for a room of that capacity.
// An errors target left out is the caller's to fill in (DefaultAdaptErrors): 0 % is
// a target an operator may mean.
func (a Adapt) WithDefaults(capacity int) Adapt {
	if a.Min == 0 {
		a.Min = DefaultAdaptMin
	}
	if a.Max == 0 {
		a.Max = min(max(defaultAdaptMaxFactor*capacity, a.Min), maxCapacity)
	}
	return a
}

// CheckAdapt refuses targets and bounds the controller cannot keep, for a room of
// that capacity (0: the capacity is not known here, and is clamped instead).
func CheckAdapt(a Adapt, capacity int) error {
	switch {
	case a.Latency <= 0:
		return fmt.Errorf("adapt latency must be a positive duration, got %v", a.Latency)
	case a.Latency > maxTiming:
		return fmt.Errorf("adapt latency must be at most %v, got %v", maxTiming, a.Latency)
	case math.IsNaN(a.Errors) || a.Errors < 0 || a.Errors > 1:
		return fmt.Errorf("adapt errors must be a percentage from 0%% to 100%%, got %s", FormatShare(a.Errors))
	case a.Min < 1:
		return fmt.Errorf("adapt min must be at least 1, got %d", a.Min)
	case a.Max < a.Min:
		return fmt.Errorf("adapt max (%d) must be at least min (%d)", a.Max, a.Min)
	case a.Max > maxCapacity:
		return fmt.Errorf("adapt max must be at most %d, got %d", maxCapacity, a.Max)
	case capacity > 0 && (capacity < a.Min || capacity > a.Max):
		return fmt.Errorf("capacity (%d) must be within adapt's min (%d) and max (%d): it is where adapt starts", capacity, a.Min, a.Max)
	}
	return nil
}

// ParseShare reads a percentage such as "2%" or "0.5%" as a share (0.02, 0.005).
func ParseShare(s string) (float64, error) {
	num, ok := strings.CutSuffix(strings.TrimSpace(s), "%")
	if !ok {
		return 0, fmt.Errorf("want a percentage such as 2%%, got %q", clip([]byte(s)))
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("want a percentage such as 2%%, got %q", clip([]byte(s)))
	}
	return f / 100, nil
}

// FormatShare writes a share as a percentage ("2%").
func FormatShare(f float64) string {
	return strconv.FormatFloat(f*100, 'f', -1, 64) + "%"
}

// adaptJSON is how the overrides and the admin API write adapt's targets.
type adaptJSON struct {
	Latency Period `json:"latency"`
	Errors  string `json:"errors"`
	Min     int    `json:"min"`
	Max     int    `json:"max"`
}

// MarshalJSON writes the targets as the Caddyfile does: a duration and a percentage.
func (a Adapt) MarshalJSON() ([]byte, error) {
	return json.Marshal(adaptJSON{Latency: Period(a.Latency), Errors: FormatShare(a.Errors), Min: a.Min, Max: a.Max})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (a *Adapt) UnmarshalJSON(b []byte) error {
	var in adaptJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	share, err := ParseShare(in.Errors)
	if err != nil {
		return fmt.Errorf("adapt errors: %w", err)
	}
	*a = Adapt{Latency: time.Duration(in.Latency), Errors: share, Min: in.Min, Max: in.Max}
	return nil
}

// AdaptOverride is the admin API's change to adapt: new targets, or Off. Kept with
// the runtime settings as the targets' object, or "off".
type AdaptOverride struct {
	Off     bool
	Targets Adapt
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
		a, known := Adapt{Errors: DefaultAdaptErrors}, true
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
			share, err := ParseShare(text)
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
		if err := CheckAdapt(a, 0); err != nil {
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
func adaptInfo(s *Settings, d *Adapted) *AdaptInfo {
	if s.Adapt == nil {
		return nil
	}
	a := s.Adapt
	info := &AdaptInfo{Latency: a.Latency.String(), Errors: FormatShare(a.Errors), Min: a.Min, Max: a.Max,
		PeriodSeconds: ControlPeriod.Seconds()}
	if d != nil {
		p90 := round(time.Duration(d.P90)).String()
		share := FormatShare(roundShare(Reading{Requests: d.Requests, Failed: d.Failed}.ErrorShare()))
		at := periodStart(d.Period + 1).UTC()
		info.P90, info.ErrorShare, info.Requests, info.Capacity, info.Reason, info.DecidedAt =
			&p90, &share, &d.Requests, &d.Capacity, &d.Reason, &at
	}
	return info
}
