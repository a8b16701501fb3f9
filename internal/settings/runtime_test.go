package settings

import (
	"reflect"
	"strings"
	"testing"
	"time"
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
			t.Errorf("setting %q has no settings.Overrides field", def.name)
		}
	}
	delete(fields, "adapted") // the controller's decision, which no PATCH sets
	for name := range fields {
		if defined[name] != 1 {
			t.Errorf("settings.Overrides field %q is defined %d times, want once", name, defined[name])
		}
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
