package capacity

import (
	"encoding/json"
	"time"
)

// Override is the admin API's change to adapt: new targets, or Off. It is kept with
// the runtime settings as the targets' object, or "off".
type Override struct {
	Off     bool
	Targets Targets
}

// MarshalJSON writes "off" or the targets.
func (o Override) MarshalJSON() ([]byte, error) {
	if o.Off {
		return []byte(`"off"`), nil
	}
	return json.Marshal(o.Targets)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (o *Override) UnmarshalJSON(b []byte) error {
	if string(b) == `"off"` {
		*o = Override{Off: true}
		return nil
	}
	*o = Override{}
	return json.Unmarshal(b, &o.Targets)
}

// Info is adapt as the admin API shows it: the targets in force, and the controller's
// last decision (null fields until it made one).
type Info struct {
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

// InfoOf shows the targets t in force with the last decision d (nil: none yet); nil
// while adapt is off (t nil).
func InfoOf(t *Targets, d *Decision) *Info {
	if t == nil {
		return nil
	}
	info := &Info{Latency: t.Latency.String(), Errors: FormatShare(t.Errors), Min: t.Min, Max: t.Max,
		PeriodSeconds: ControlPeriod.Seconds()}
	if d != nil {
		p90 := RoundP90(d.MeasuredP90()).String()
		share := ShownShare(Reading{Requests: d.Requests, Failed: d.Failed}.ErrorShare())
		at := PeriodStart(d.Period + 1).UTC()
		info.P90, info.ErrorShare, info.Requests, info.Capacity, info.Reason, info.DecidedAt =
			&p90, &share, &d.Requests, &d.Capacity, &d.Reason, &at
	}
	return info
}
