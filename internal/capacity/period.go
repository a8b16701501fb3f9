package capacity

import "time"

// Control periods are numbered from the Unix epoch, so every instance sharing a
// store agrees on them: each reports what it measured in a period, and the first to
// claim the period decides for the fleet (fleet.go).

// PeriodOf is the control period now falls in.
func PeriodOf(now time.Time) int64 { return now.UnixNano() / int64(ControlPeriod) }

// PeriodStart is when period starts.
func PeriodStart(period int64) time.Time { return time.Unix(0, period*int64(ControlPeriod)) }

// Decision is the law's decision for one period, kept with the room's runtime
// settings so every instance shows and applies the same one: its JSON is read by
// every version of the fleet.
type Decision struct {
	Capacity int `json:"capacity"`
	// Period is the control period decided on; Requests, Failed and P90 are what it
	// measured, fleet-wide.
	Period   int64    `json:"period"`
	Requests uint64   `json:"requests"`
	Failed   uint64   `json:"failed"`
	P90      duration `json:"p90"`
	Reason   string   `json:"reason"`
}

// NewDecision is the decision to go to capacity next, for reason, after period
// read as r.
func NewDecision(period int64, r Reading, next int, reason string) Decision {
	return Decision{Capacity: next, Period: period, Requests: r.Requests, Failed: r.Failed, P90: duration(r.P90), Reason: reason}
}

// MeasuredP90 is the p90 the decided period measured.
func (d Decision) MeasuredP90() time.Duration { return time.Duration(d.P90) }
