package settings

import (
	"encoding/json"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/capacity"
)

// Overrides are the runtime changes made through the admin API. They are kept in the
// room's store, so every instance sharing it reads them within a tick, and they win
// over the configuration until cleared. Each field is one runtime setting
// (runtime.go); nil keeps the configured value.
type Overrides struct {
	Capacity    *int    `json:"capacity,omitempty"`
	Rate        *Rate   `json:"rate,omitempty"` // a Count of 0 turns the limit off
	Mode        *string `json:"mode,omitempty"` // wins over an event's pre-queue too
	Message     *string `json:"message,omitempty"`
	SessionTTL  *Period `json:"session_ttl,omitempty"`
	QueueTTL    *Period `json:"queue_ttl,omitempty"`
	AwayTTL     *Period `json:"away_ttl,omitempty"`
	SessionMax  *Period `json:"session_max,omitempty"` // 0 turns it off
	ArriveTTL   *Period `json:"arrive_ttl,omitempty"`  // 0 turns it off
	ProofOfWork *int    `json:"proof_of_work,omitempty"`
	// Adapt changes the adaptive capacity's targets, or turns it off.
	Adapt *capacity.Override `json:"adapt,omitempty"`

	// Adapted is not a setting but the adaptive capacity's last decision
	// (capacity.Steering), kept here so that every instance applies and shows the same.
	Adapted *capacity.Decision `json:"adapted,omitempty"`
}

// Operators are the overrides without the controller's decision: what the admin API
// shows as the operators' changes.
func (o Overrides) Operators() Overrides {
	o.Adapted = nil
	return o
}

// Period is a duration in the overrides and the admin API, written as Go prints it
// ("5m0s").
type Period time.Duration

// MarshalJSON writes the period as Go prints a duration.
func (p Period) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(p).String()) }

// UnmarshalJSON reads what MarshalJSON writes.
func (p *Period) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*p = Period(d)
	return nil
}

// Merge carries a PATCH into doc, the runtime settings document as the store holds
// it (each field as JSON), which was was: the fields named (fields) take their values
// in patch, or are removed (null: the configured value), and the others keep what
// the store holds. What a PATCH means for the adaptive capacity is carried too (see
// adaptMerge), under cfg at now.
func Merge(cfg *Config, now time.Time, fields map[string]json.RawMessage, patch Overrides, was Overrides, doc map[string]json.RawMessage) {
	var set map[string]json.RawMessage // the fields patch sets, as JSON
	b, _ := json.Marshal(patch)
	_ = json.Unmarshal(b, &set)
	for name := range fields {
		if v, ok := set[name]; ok {
			doc[name] = v
		} else {
			delete(doc, name)
		}
	}
	adaptMerge(cfg, now, fields, &patch, was, doc)
}

// CheckOverrides refuses overrides under which cfg's timings contradict each other.
func CheckOverrides(cfg *Config, o *Overrides, now time.Time) error {
	s := At(cfg, *o, now)
	if err := CheckTimings(s.QueueTTL, s.AwayTTL); err != nil {
		return err
	}
	return CheckArrive(s.QueueTTL, s.ArriveTTL)
}
