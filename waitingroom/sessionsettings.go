package waitingroom

import (
	"encoding/json"
	"time"

	"github.com/caddyserver/caddy/v2"
)

// maxSessionSetting bounds what PATCH takes for the session settings: a month is
// beyond any sale, and below the 49 days the Redis store's 32-bit heard times span.
const maxSessionSetting = 30 * 24 * time.Hour

// period is a duration in the runtime settings document and the admin API, written as
// Go prints it ("5m0s") and read as Caddy reads durations ("5m", "1d").
type period time.Duration

func (p period) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(p).String()) }

func (p *period) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	d, err := caddy.ParseDuration(s)
	if err != nil {
		return err
	}
	*p = period(d)
	return nil
}

// sessionSettings are the timings a room runs with at one moment: the configuration,
// then the admin API's overrides.
type sessionSettings struct {
	sessionTTL, queueTTL, awayTTL time.Duration
	sessionMax                    time.Duration // 0: off
}

// sessionSettingsWith is what the room runs with under the overrides o (nil: none).
func (h *Handler) sessionSettingsWith(o *overrides) sessionSettings {
	s := sessionSettings{
		sessionTTL: time.Duration(h.SessionTTL),
		queueTTL:   time.Duration(h.QueueTTL),
		sessionMax: time.Duration(h.SessionMax),
	}
	if h.AwayTTL != nil {
		s.awayTTL = time.Duration(*h.AwayTTL)
	}
	if o == nil {
		return s
	}
	if o.SessionTTL != nil {
		s.sessionTTL = time.Duration(*o.SessionTTL)
	}
	if o.QueueTTL != nil {
		s.queueTTL = time.Duration(*o.QueueTTL)
	}
	if o.AwayTTL != nil {
		s.awayTTL = time.Duration(*o.AwayTTL)
	}
	if o.SessionMax != nil {
		s.sessionMax = time.Duration(*o.SessionMax)
	}
	return s
}

// sessions is what the room runs with now. Every instance reads the overrides from
// the store with the other runtime settings (room.loadOverrides), so a PATCH reaches
// all of them within a tick.
func (h *Handler) sessions() sessionSettings {
	var o *overrides
	if h.room != nil {
		o = h.room.overrides.Load()
	}
	return h.sessionSettingsWith(o)
}

func (h *Handler) sessionTTL() time.Duration { return h.sessions().sessionTTL }
func (h *Handler) queueTTL() time.Duration   { return h.sessions().queueTTL }

// sessionFloors are the least each session setting takes (floors.go); away_ttl's is
// queue_ttl, which checkSessions holds.
var sessionFloors = map[string]time.Duration{"session_ttl": minSessionTTL, "queue_ttl": minQueueTTL, "session_max": minSessionMax}

// patchSession reads a PATCH's session_ttl, queue_ttl, away_ttl or session_max into
// o: null restores the configured value, a duration string sets it. away_ttl takes 0
// (the place is lost at queue_ttl) and session_max takes "off".
func (o *overrides) patchSession(name string, raw json.RawMessage) error {
	field := map[string]**period{"session_ttl": &o.SessionTTL, "queue_ttl": &o.QueueTTL,
		"away_ttl": &o.AwayTTL, "session_max": &o.SessionMax}[name]
	if string(raw) == "null" {
		*field = nil
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return inputErrorf("%s must be a duration string such as \"5m\", or null, got %s", name, clip(raw))
	}
	if name == "session_max" && s == "off" {
		off := period(0)
		*field = &off
		return nil
	}
	d, err := caddy.ParseDuration(s)
	switch {
	case err != nil:
		return inputErrorf("%s: bad duration %q: want a duration such as 30s or 5m", name, clip([]byte(s)))
	case d < 0 || d == 0 && name != "away_ttl":
		if name == "session_max" {
			return inputErrorf("session_max must be greater than 0 (\"off\" turns it off), got %q", clip([]byte(s)))
		}
		return inputErrorf("%s must be greater than 0, got %q", name, clip([]byte(s)))
	case d > maxSessionSetting:
		return inputErrorf("%s must be at most %v, got %q", name, maxSessionSetting, clip([]byte(s)))
	}
	if floor := sessionFloors[name]; d > 0 {
		if err := atLeast(name, d, floor); err != nil {
			return &inputError{msg: err.Error()}
		}
	}
	p := period(d)
	*field = &p
	return nil
}

// checkSessions refuses overrides under which the timings contradict each other.
func (h *Handler) checkSessions(o *overrides) error {
	s := h.sessionSettingsWith(o)
	if s.awayTTL > 0 && s.awayTTL < s.queueTTL {
		return inputErrorf("away_ttl (%v) must be 0 or at least queue_ttl (%v): a quiet waiter is kept at least as long as a present one",
			s.awayTTL, s.queueTTL)
	}
	return nil
}

// sessionInfo is the admin room object's effective session settings.
type sessionInfo struct {
	SessionTTL string `json:"session_ttl"`
	QueueTTL   string `json:"queue_ttl"`
	AwayTTL    string `json:"away_ttl"`
	// SessionMax is "" while off.
	SessionMax string `json:"session_max"`
}

func (s sessionSettings) info() sessionInfo {
	i := sessionInfo{SessionTTL: s.sessionTTL.String(), QueueTTL: s.queueTTL.String(), AwayTTL: s.awayTTL.String()}
	if s.sessionMax > 0 {
		i.SessionMax = s.sessionMax.String()
	}
	return i
}

// heartbeatEvery is how often the hub hears of its connected waiters: well within
// queue_ttl, so a connected waiter never goes away.
func heartbeatEvery(queueTTL time.Duration) time.Duration {
	return min(queueTTL/3, 10*time.Second)
}
