package room

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/capacity"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
)

// settingValue reads one runtime setting from a snapshot, as a comparable value.
var settingValue = map[string]func(*settings.Snapshot) any{
	"capacity":      func(s *settings.Snapshot) any { return s.Capacity },
	"rate":          func(s *settings.Snapshot) any { return s.Rate },
	"mode":          func(s *settings.Snapshot) any { return s.Mode },
	"message":       func(s *settings.Snapshot) any { return s.Message },
	"session_ttl":   func(s *settings.Snapshot) any { return s.SessionTTL },
	"queue_ttl":     func(s *settings.Snapshot) any { return s.QueueTTL },
	"away_ttl":      func(s *settings.Snapshot) any { return s.AwayTTL },
	"session_max":   func(s *settings.Snapshot) any { return s.SessionMax },
	"arrive_ttl":    func(s *settings.Snapshot) any { return s.ArriveTTL },
	"proof_of_work": func(s *settings.Snapshot) any { return s.ProofOfWork },
	"adapt":         func(s *settings.Snapshot) any { return s.Adapt },
}

// Each setting's PATCH changes its own value in the snapshot every request reads,
// and nothing else; null gives back the configured value.
func TestEachSettingPatchesAndRestoresItsOwnField(t *testing.T) {
	patches := map[string]struct {
		body string
		want any
	}{
		"capacity":      {`{"capacity":7}`, 7},
		"rate":          {`{"rate":{"count":3,"per":"1m"}}`, settings.Rate{Count: 3, Per: time.Minute}},
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
	if len(patches) != len(settings.RuntimeSettings()) || len(settingValue) != len(settings.RuntimeSettings()) {
		t.Fatalf("%d patches and %d readers for %d settings: a setting is missing here", len(patches), len(settingValue), len(settings.RuntimeSettings()))
	}
	for _, setting := range settings.RuntimeSettings() {
		t.Run(setting, func(t *testing.T) {
			rm, clk := newTestRoom(t, 2, nil)
			ctx := context.Background()
			before := *rm.Settings(clk.Now())
			p := patches[setting]
			if _, err := rm.Patch(ctx, []byte(p.body)); err != nil {
				t.Fatalf("PATCH %s: %v", p.body, err)
			}
			after := rm.Settings(clk.Now())
			for name, value := range settingValue {
				got, was := value(after), value(&before)
				switch {
				case name == setting && !reflect.DeepEqual(got, p.want):
					t.Errorf("after PATCH %s, %s = %v, want %v", p.body, name, got, p.want)
				case name != setting && !reflect.DeepEqual(got, was):
					t.Errorf("PATCH %s changed %s from %v to %v", p.body, name, was, got)
				}
			}
			if _, err := rm.Patch(ctx, []byte(`{"`+setting+`":null}`)); err != nil {
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
