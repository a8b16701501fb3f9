package capacity

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Targets are the adaptive capacity's targets and bounds: the capacity is set from
// the shop's own answers to keep the shop's p90 time to first byte under Latency and
// its share of failed requests under Errors, never below Min nor above Max.
type Targets struct {
	Latency time.Duration
	Errors  float64 // a share, 0.02 for 2 %
	Min     int
	Max     int
}

// The defaults of the fields an adapt block may leave out; Max's is
// defaultMaxFactor × capacity.
const (
	DefaultErrors    = 0.05
	DefaultMin       = 1
	defaultMaxFactor = 10
)

// MaxCapacity is the largest capacity a room has: what a mode that admits everyone
// sets, and the bound of every capacity an operator or the law may set.
const MaxCapacity = 1<<31 - 1

// MaxLatency bounds the latency target, as the room bounds each of its timings.
const MaxLatency = 30 * 24 * time.Hour

// WithDefaults fills in the bounds t leaves out (0), for a room of that capacity.
// An errors target left out is the caller's to fill in (DefaultErrors): 0 % is a
// target an operator may mean.
func (t Targets) WithDefaults(capacity int) Targets {
	if t.Min == 0 {
		t.Min = DefaultMin
	}
	if t.Max == 0 {
		t.Max = min(max(defaultMaxFactor*capacity, t.Min), MaxCapacity)
	}
	return t
}

// Configured are the targets an adapt block configures, for a room of that capacity:
// the errors target as a percentage ("" for DefaultErrors), the bounds' defaults
// filled in, and checked.
func Configured(latency time.Duration, errors string, min, max, capacity int) (*Targets, error) {
	t := Targets{Latency: latency, Errors: DefaultErrors, Min: min, Max: max}
	if errors != "" {
		share, err := ParseShare(errors)
		if err != nil {
			return nil, fmt.Errorf("adapt errors: %w", err)
		}
		t.Errors = share
	}
	if min < 0 || max < 0 {
		return nil, fmt.Errorf("adapt min and max must not be negative, got %d and %d", min, max)
	}
	t = t.WithDefaults(capacity)
	if err := Check(t, capacity); err != nil {
		return nil, err
	}
	return &t, nil
}

// Check refuses targets and bounds the law cannot keep, for a room of that capacity
// (0: the capacity is not known here, and is clamped instead).
func Check(t Targets, capacity int) error {
	switch {
	case t.Latency <= 0:
		return fmt.Errorf("adapt latency must be a positive duration, got %v", t.Latency)
	case t.Latency > MaxLatency:
		return fmt.Errorf("adapt latency must be at most %v, got %v", MaxLatency, t.Latency)
	case math.IsNaN(t.Errors) || t.Errors < 0 || t.Errors > 1:
		return fmt.Errorf("adapt errors must be a percentage from 0%% to 100%%, got %s", FormatShare(t.Errors))
	case t.Min < 1:
		return fmt.Errorf("adapt min must be at least 1, got %d", t.Min)
	case t.Max < t.Min:
		return fmt.Errorf("adapt max (%d) must be at least min (%d)", t.Max, t.Min)
	case t.Max > MaxCapacity:
		return fmt.Errorf("adapt max must be at most %d, got %d", MaxCapacity, t.Max)
	case capacity > 0 && (capacity < t.Min || capacity > t.Max):
		return fmt.Errorf("capacity (%d) must be within adapt's min (%d) and max (%d): it is where adapt starts", capacity, t.Min, t.Max)
	}
	return nil
}

// ParseShare reads a percentage such as "2%" or "0.5%" as a share (0.02, 0.005).
func ParseShare(s string) (float64, error) {
	num, ok := strings.CutSuffix(strings.TrimSpace(s), "%")
	if !ok {
		return 0, fmt.Errorf("want a percentage such as 2%%, got %.80q", s)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("want a percentage such as 2%%, got %.80q", s)
	}
	return f / 100, nil
}

// FormatShare writes a share as a person writes the percentage: "2%", "0.5%",
// "27.7%" (to a millionth of a percent at most, so that the float's rounding in the
// ×100, 27.700000000000003, never shows).
func FormatShare(f float64) string {
	return strconv.FormatFloat(math.Round(f*1e8)/1e6, 'f', -1, 64) + "%"
}

// duration is a time.Duration as the room's JSON writes one: "800ms".
type duration time.Duration

func (d duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = duration(v)
	return nil
}

// targetsJSON is how the runtime settings and the admin API write the targets.
type targetsJSON struct {
	Latency duration `json:"latency"`
	Errors  string   `json:"errors"`
	Min     int      `json:"min"`
	Max     int      `json:"max"`
}

// MarshalJSON writes the targets as the Caddyfile does: a duration and a percentage.
func (t Targets) MarshalJSON() ([]byte, error) {
	return json.Marshal(targetsJSON{Latency: duration(t.Latency), Errors: FormatShare(t.Errors), Min: t.Min, Max: t.Max})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (t *Targets) UnmarshalJSON(b []byte) error {
	var in targetsJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	share, err := ParseShare(in.Errors)
	if err != nil {
		return fmt.Errorf("adapt errors: %w", err)
	}
	*t = Targets{Latency: time.Duration(in.Latency), Errors: share, Min: in.Min, Max: in.Max}
	return nil
}
