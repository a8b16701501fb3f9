package settings

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/capacity"
)

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
	patch: func(p *Patching, o *Overrides, raw json.RawMessage) error {
		if string(raw) == "null" || string(raw) == `"off"` {
			o.Adapt = &capacity.Override{Off: true}
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
			return fmt.Errorf(`adapt must be an object of any of "latency", "errors", "min" and "max" (such as {"latency": "800ms"}), or null to turn it off, got %s`, clip(raw))
		}
		// The snapshot in force (not one made now, which would make this table refer
		// to itself through At).
		s := p.InForce
		a, known := capacity.Targets{Errors: capacity.DefaultErrors}, true
		switch {
		case s.Adapt != nil:
			a = *s.Adapt
		case p.Config.Adapt != nil:
			a = *p.Config.Adapt
		default:
			known = false
		}
		if in.Latency != nil {
			d, err := p.readDuration(*in.Latency)
			if err != nil {
				return fmt.Errorf("adapt latency must be a duration string such as \"800ms\", got %s", clip(*in.Latency))
			}
			a.Latency = d
		}
		if in.Errors != nil {
			var text string
			if json.Unmarshal(*in.Errors, &text) != nil {
				return fmt.Errorf("adapt errors must be a percentage string such as \"2%%\", got %s", clip(*in.Errors))
			}
			share, err := capacity.ParseShare(text)
			if err != nil {
				return fmt.Errorf("adapt errors: %v", err)
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
				return fmt.Errorf("adapt %s must be at least 1, got %d", b.name, *b.given)
			}
			*b.field = *b.given
		}
		if !known && in.Latency == nil {
			return fmt.Errorf(`adapt is off: turning it on needs a "latency" target, such as {"latency": "800ms"}`)
		}
		if !known {
			a = a.WithDefaults(s.Capacity)
		}
		// The capacity in force is clamped into new bounds, not refused by them.
		if err := capacity.Check(a, 0); err != nil {
			return err
		}
		o.Adapt = &capacity.Override{Targets: a}
		return nil
	},
	apply: func(s *Snapshot, o *Overrides) {
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
// settings of cfg at now (old is what they were): a capacity the operator sets is
// where the controller continues from, so its last decision goes; turning adapt off
// keeps the capacity in force, as the operator's, unless the PATCH names one.
func adaptMerge(cfg *Config, now time.Time, fields map[string]json.RawMessage, patch *Overrides, old Overrides, merged map[string]json.RawMessage) {
	if _, ok := fields["capacity"]; ok {
		delete(merged, "adapted")
	}
	if _, ok := fields["adapt"]; !ok || patch.Adapt == nil || !patch.Adapt.Off {
		return
	}
	if _, ok := fields["capacity"]; !ok {
		merged["capacity"], _ = json.Marshal(At(cfg, old, now).Capacity)
	}
	delete(merged, "adapted")
}
