package room

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/capacity"
)

// Every field of the overrides is a runtime setting defined once, and every
// definition has its field: a setting added to one place and not the other fails
// here, not in an operator's PATCH.
func TestEveryOverrideIsDefinedOnce(t *testing.T) {
	fields := map[string]bool{}
	ot := reflect.TypeFor[Overrides]()
	for i := range ot.NumField() {
		name, _, _ := strings.Cut(ot.Field(i).Tag.Get("json"), ",")
		fields[name] = true
	}
	defined := map[string]int{}
	for _, def := range runtimeSettings {
		defined[def.name]++
		if !fields[def.name] {
			t.Errorf("setting %q has no Overrides field", def.name)
		}
	}
	delete(fields, "adapted") // the controller's decision, which no PATCH sets
	for name := range fields {
		if defined[name] != 1 {
			t.Errorf("Overrides field %q is defined %d times, want once", name, defined[name])
		}
	}
}

// settingValue reads one runtime setting from a snapshot, as a comparable value.
var settingValue = map[string]func(*Settings) any{
	"capacity":      func(s *Settings) any { return s.Capacity },
	"rate":          func(s *Settings) any { return s.Rate },
	"mode":          func(s *Settings) any { return s.Mode },
	"message":       func(s *Settings) any { return s.Message },
	"session_ttl":   func(s *Settings) any { return s.SessionTTL },
	"queue_ttl":     func(s *Settings) any { return s.QueueTTL },
	"away_ttl":      func(s *Settings) any { return s.AwayTTL },
	"session_max":   func(s *Settings) any { return s.SessionMax },
	"arrive_ttl":    func(s *Settings) any { return s.ArriveTTL },
	"proof_of_work": func(s *Settings) any { return s.ProofOfWork },
	"adapt":         func(s *Settings) any { return s.Adapt },
}

// Each setting's PATCH changes its own value in the snapshot every request reads,
// and nothing else; null gives back the configured value.
func TestEachSettingPatchesAndRestoresItsOwnField(t *testing.T) {
	patches := map[string]struct {
		body string
		want any
	}{
		"capacity":      {`{"capacity":7}`, 7},
		"rate":          {`{"rate":{"count":3,"per":"1m"}}`, Rate{Count: 3, Per: time.Minute}},
		"mode":          {`{"mode":"queue_all"}`, "queue_all"},
		"message":       {`{"message":"sold out"}`, "sold out"},
		"session_ttl":   {`{"session_ttl":"2m"}`, 2 * time.Minute},
		"queue_ttl":     {`{"queue_ttl":"40s"}`, 40 * time.Second},
		"away_ttl":      {`{"away_ttl":"10m"}`, 10 * time.Minute},
		"session_max":   {`{"session_max":"1h"}`, time.Hour},
		"arrive_ttl":    {`{"arrive_ttl":"20s"}`, 20 * time.Second},
		"proof_of_work": {`{"proof_of_work":12}`, 12},
		// null turns adapt off, which it is in the configuration here.
		"adapt": {`{"adapt":{"latency":"800ms"}}`, &capacity.Targets{Latency: 800 * time.Millisecond, Errors: capacity.DefaultErrors, Min: 1, Max: 20}},
	}
	if len(patches) != len(runtimeSettings) || len(settingValue) != len(runtimeSettings) {
		t.Fatalf("%d patches and %d readers for %d settings: a setting is missing here", len(patches), len(settingValue), len(runtimeSettings))
	}
	for _, def := range runtimeSettings {
		t.Run(def.name, func(t *testing.T) {
			rm, clk := newTestRoom(t, 2, nil)
			ctx := context.Background()
			before := *rm.Settings(clk.Now())
			p := patches[def.name]
			if _, err := rm.Patch(ctx, []byte(p.body)); err != nil {
				t.Fatalf("PATCH %s: %v", p.body, err)
			}
			after := rm.Settings(clk.Now())
			for name, value := range settingValue {
				got, was := value(after), value(&before)
				switch {
				case name == def.name && !reflect.DeepEqual(got, p.want):
					t.Errorf("after PATCH %s, %s = %v, want %v", p.body, name, got, p.want)
				case name != def.name && !reflect.DeepEqual(got, was):
					t.Errorf("PATCH %s changed %s from %v to %v", p.body, name, was, got)
				}
			}
			if _, err := rm.Patch(ctx, []byte(`{"`+def.name+`":null}`)); err != nil {
				t.Fatalf("PATCH null: %v", err)
			}
			restored := rm.Settings(clk.Now())
			for name, value := range settingValue {
				if got, was := value(restored), value(&before); !reflect.DeepEqual(got, was) {
					t.Errorf("after null, %s = %v, want the configured %v", name, got, was)
				}
			}
		})
	}
}

// A timing the room cannot keep is refused with the same message wherever it is
// set; the Caddyfile, Validate and PATCH all call CheckTiming (the module's tests
// hold the three against one table).
func TestTimingsHaveOneMessage(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    time.Duration
		want string
	}{
		{"queue_ttl", time.Nanosecond, "queue_ttl must be at least 5s, got 1ns"},
		{"session_ttl", 0, "session_ttl must be greater than 0, got 0s"},
		{"session_max", 9 * time.Second, "session_max must be at least 10s, got 9s"},
		{"away_ttl", -time.Second, "away_ttl must be 0 (off) or a positive duration, got -1s"},
		{"queue_ttl", 1000 * 24 * time.Hour, "queue_ttl must be at most 720h0m0s, got 24000h0m0s"},
		{"session_max", 31 * 24 * time.Hour, "session_max must be at most 720h0m0s"},
		{"arrive_ttl", 4 * time.Second, "arrive_ttl must be at least 5s, got 4s"},
		{"arrive_ttl", -time.Second, "arrive_ttl must be 0 (off) or a positive duration, got -1s"},
		{"arrive_ttl", 1000 * 24 * time.Hour, "arrive_ttl must be at most 720h0m0s"},
	} {
		err := CheckTiming(tc.name, tc.d)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckTiming(%s, %v) = %v, want %q", tc.name, tc.d, err, tc.want)
		}
	}
	for _, ok := range []struct {
		name string
		d    time.Duration
	}{{"away_ttl", 0}, {"session_max", 0}, {"queue_ttl", 30 * 24 * time.Hour}, {"session_ttl", 10 * time.Second}} {
		if err := CheckTiming(ok.name, ok.d); err != nil {
			t.Errorf("CheckTiming(%s, %v) = %v, want nil", ok.name, ok.d, err)
		}
	}
}
