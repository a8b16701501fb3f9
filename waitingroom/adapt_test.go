package waitingroom

import (
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// What a careless operator writes in an adapt block fails at adapt, on the line of
// the mistake (or of the block, for what holds only with the capacity, which may come
// after it), naming the option.
func TestAdaptCaddyfileErrors(t *testing.T) {
	room := func(adapt string) string {
		return "waiting_room {\n name a\n capacity 200\n adapt {\n" + adapt + " }\n}"
	}
	for _, tc := range []struct {
		name, input, wantErr string
		line                 int
	}{
		{"no latency", room("  errors 2%\n"), "adapt needs a latency target", 6},
		{"empty block", "waiting_room {\n name a\n capacity 200\n adapt {\n }\n}", "adapt needs a latency target", 5},
		{"no block", "waiting_room {\n name a\n capacity 200\n adapt\n}", "adapt needs a latency target", 4},
		{"argument on the adapt line", "waiting_room {\n name a\n capacity 200\n adapt 800ms\n}", `adapt takes a block, not "800ms"`, 4},
		{"latency banana", room("  latency banana\n"), `adapt latency: bad duration "banana"`, 5},
		{"latency negative", room("  latency -1s\n"), `adapt latency: bad duration "-1s"`, 5},
		{"latency 0", room("  latency 0\n"), `adapt latency: bad duration "0"`, 5},
		{"latency 1000 days", room("  latency 1000d\n"), "adapt latency must be at most 720h", 5},
		{"latency twice", room("  latency 1s\n  latency 2s\n"), `duplicate adapt option "latency"`, 6},
		{"latency two values", room("  latency 1s 2s\n"), "wrong argument count", 5},
		{"errors without %", room("  latency 1s\n  errors 2\n"), `adapt errors: want a percentage such as 2%, got "2"`, 6},
		{"errors over 100%", room("  latency 1s\n  errors 150%\n"), "adapt errors must be a percentage from 0% to 100%, got 150%", 6},
		{"errors negative", room("  latency 1s\n  errors -1%\n"), "adapt errors must be a percentage from 0% to 100%, got -1%", 6},
		{"errors NaN", room("  latency 1s\n  errors NaN%\n"), "adapt errors: want a percentage", 6},
		{"min 0", room("  latency 1s\n  min 0\n"), `adapt min must be a whole number greater than 0, got "0"`, 6},
		{"max words", room("  latency 1s\n  max lots\n"), `adapt max must be a whole number greater than 0, got "lots"`, 6},
		{"unknown option", room("  latency 1s\n  target 5\n"), `unrecognized adapt option "target"`, 6},
		{"capacity under min", room("  latency 1s\n  min 300\n"), "capacity (200) must be within adapt's min (300) and max (2000)", 4},
		{"capacity over max", room("  latency 1s\n  max 100\n"), "capacity (200) must be within adapt's min (1) and max (100)", 4},
		{"max under min", room("  latency 1s\n  min 300\n  max 250\n"), "adapt max (250) must be at least min (300)", 4},
		{"twice", "waiting_room {\n name a\n capacity 200\n adapt {\n  latency 1s\n }\n adapt {\n  latency 2s\n }\n}", `duplicate subdirective "adapt"`, 7},
	} {
		t.Run(tc.name, func(t *testing.T) { checkCaddyfileError(t, tc.input, tc.wantErr, tc.line) })
	}
}

// A whole adapt block reads into the room's targets, defaults filled in.
func TestAdaptCaddyfile(t *testing.T) {
	for _, tc := range []struct {
		block    string
		latency  time.Duration
		errors   float64
		min, max int
	}{
		{"  latency 800ms\n  errors 2%\n  min 20\n  max 2000\n", 800 * time.Millisecond, 0.02, 20, 2000},
		{"  latency 1s\n", time.Second, 0.05, 1, 2000},
		{"  latency 1s\n  errors 0%\n", time.Second, 0, 1, 2000},
		{"  latency 1s\n  errors 0.5%\n  max 200\n", time.Second, 0.005, 1, 200},
	} {
		var h Handler
		in := "waiting_room {\n name a\n capacity 200\n adapt {\n" + tc.block + " }\n}"
		if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(in)); err != nil {
			t.Fatalf("%q: %v", tc.block, err)
		}
		a, err := h.Adapt.engine(h.Capacity)
		if err != nil {
			t.Fatalf("%q: %v", tc.block, err)
		}
		if a.Latency != tc.latency || a.Errors != tc.errors || a.Min != tc.min || a.Max != tc.max {
			t.Errorf("%q read as %+v, want latency %v, errors %v, min %d, max %d", tc.block, *a, tc.latency, tc.errors, tc.min, tc.max)
		}
	}
}

// The JSON config, with no Caddyfile parser in front, is held to the same checks.
func TestAdaptValidate(t *testing.T) {
	for _, tc := range []struct {
		name, json, wantErr string
	}{
		{"whole", `{"latency":"800ms","errors":"2%","min":20,"max":2000}`, ""},
		{"latency only", `{"latency":"1s"}`, ""},
		{"no latency", `{"errors":"2%"}`, "adapt latency must be a positive duration, got 0s"},
		{"negative latency", `{"latency":"-1s"}`, "adapt latency must be a positive duration"},
		{"latency 1000 days", `{"latency":"1000d"}`, "adapt latency must be at most 720h0m0s"},
		{"errors as a number", `{"latency":"1s","errors":"0.02"}`, `adapt errors: want a percentage such as 2%`},
		{"errors 101%", `{"latency":"1s","errors":"101%"}`, "adapt errors must be a percentage from 0% to 100%, got 101%"},
		{"negative min", `{"latency":"1s","min":-5}`, "adapt min and max must not be negative"},
		{"capacity over max", `{"latency":"1s","max":100}`, "capacity (200) must be within adapt's min (1) and max (100)"},
		{"max under min", `{"latency":"1s","min":300,"max":250}`, "adapt max (250) must be at least min (300)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkValidate(t, `{"name":"a","capacity":200,"adapt":`+tc.json+`}`, tc.wantErr)
		})
	}
}

// A room too big for ten times its capacity to count still takes adapt: max's
// default stops at the largest capacity the room can hold.
func TestAdaptDefaultMaxOfAHugeRoom(t *testing.T) {
	a, err := (&Adapt{Latency: caddy.Duration(time.Second)}).engine(1_000_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if a.Max != 1<<31-1 {
		t.Fatalf("max = %d, want %d", a.Max, 1<<31-1)
	}
}
