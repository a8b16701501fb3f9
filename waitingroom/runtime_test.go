package waitingroom

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// runtimeExamples are a value of each runtime setting other than its default, as the
// Caddyfile and the JSON config write it.
var runtimeExamples = map[string]struct{ caddyfile, json string }{
	"capacity":      {"capacity 7", `7`},
	"rate":          {"rate 10 1m", `{"count":10,"per":60000000000}`},
	"mode":          {"mode random", `"random"`},
	"session_ttl":   {"session_ttl 7m", `"7m"`},
	"queue_ttl":     {"queue_ttl 2m", `"2m"`},
	"away_ttl":      {"away_ttl 20m", `"20m"`},
	"session_max":   {"session_max 15m", `"15m"`},
	"arrive_ttl":    {"arrive_ttl 40s", `"40s"`},
	"message":       {"message hello", `"hello"`},
	"proof_of_work": {"proof_of_work 12", `12`},
	"adapt":         {"adapt {\n latency 500ms\n }", `{"latency":"500ms"}`},
}

// A runtime setting is defined once, in the engine's Runtime and its table, and then
// only wired: the Overrides field a PATCH sets, the module's config field and its
// mapping into Runtime, and the Caddyfile option. This fails while any of them is
// missing for a setting, and for a field of Runtime without its table entry.
func TestEveryRuntimeSettingIsDefinedOnce(t *testing.T) {
	names := settings.RuntimeSettings()
	if n := reflect.TypeFor[settings.Runtime]().NumField(); n != len(names) {
		t.Fatalf("settings.Runtime has %d fields and the table %d settings (%v): a field without its entry", n, len(names), names)
	}
	jsonNames := func(typ reflect.Type) map[string]bool {
		out := map[string]bool{}
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			out[name] = true
		}
		return out
	}
	overrides, config := jsonNames(reflect.TypeFor[settings.Overrides]()), jsonNames(reflect.TypeFor[Handler]())
	shown := func(h *Handler) map[string]json.RawMessage {
		t.Helper()
		rt, err := h.runtime()
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(rt)
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]json.RawMessage
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	defaults := shown(&Handler{Name: "a", Capacity: 1})
	for _, name := range names {
		ex, ok := runtimeExamples[name]
		switch {
		case !ok:
			t.Errorf("%s: no example in runtimeExamples", name)
			continue
		case !overrides[name]:
			t.Errorf("%s: no field of settings.Overrides (overrides.go) for a PATCH to set", name)
		case !config[name]:
			t.Errorf("%s: no field of Handler (waitingroom.go) for the JSON config", name)
		case defaults[name] == nil:
			t.Errorf("%s: not shown by settings.Runtime's MarshalJSON", name)
		}
		var fromCaddyfile Handler
		block := "waiting_room {\n name a\n capacity 1\n " + ex.caddyfile + "\n}"
		if name == "capacity" {
			block = "waiting_room {\n name a\n " + ex.caddyfile + "\n}"
		}
		if err := fromCaddyfile.UnmarshalCaddyfile(caddyfile.NewTestDispenser(block)); err != nil {
			t.Errorf("%s: the Caddyfile's %q: %v", name, ex.caddyfile, err)
		} else if got := shown(&fromCaddyfile)[name]; string(got) == string(defaults[name]) {
			t.Errorf("%s: the Caddyfile's %q does not reach the room (%s, the default)", name, ex.caddyfile, got)
		}
		var fromJSON Handler
		if err := json.Unmarshal([]byte(`{"name":"a","capacity":1,"`+name+`":`+ex.json+`}`), &fromJSON); err != nil {
			t.Errorf("%s: the JSON config's %s: %v", name, ex.json, err)
		} else if got := shown(&fromJSON)[name]; string(got) == string(defaults[name]) {
			t.Errorf("%s: the JSON config's %s does not reach the room (%s, the default)", name, ex.json, got)
		}
	}
}
