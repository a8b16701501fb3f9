package waitingroom

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// longSecret is a secret of the least length a room takes.
const longSecret = "0123456789abcdef0123456789abcdef"

// Settings that parse but cannot work are refused the same way in the Caddyfile (with
// the sub-directive and its line), in JSON (Validate) and through the admin API, each
// error saying the floor.
func TestDurationFloors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		caddyfile string // the sub-directive, on line 4
		json      string // the handler's JSON fields beyond name and capacity
		patch     string // "" when the admin API does not set it
		wantErr   string
	}{
		{"queue_ttl 1ns", "queue_ttl 1ns", `"queue_ttl":"1ns"`, `{"queue_ttl":"1ns"}`, "queue_ttl must be at least 5s, got 1ns"},
		{"queue_ttl 4s", "queue_ttl 4s", `"queue_ttl":"4s"`, `{"queue_ttl":"4s"}`, "queue_ttl must be at least 5s, got 4s"},
		{"session_ttl 1ms", "session_ttl 1ms", `"session_ttl":"1ms"`, `{"session_ttl":"1ms"}`, "session_ttl must be at least 10s, got 1ms"},
		{"session_max 9s", "session_max 9s", `"session_max":"9s"`, `{"session_max":"9s"}`, "session_max must be at least 10s, got 9s"},
		{"rate window 1ns", "rate 5 1ns", `"rate":{"count":5,"per":"1ns"}`, `{"rate":{"count":5,"per":"1ns"}}`, "rate window must be at least 1s, got 1ns"},
		// A month is the most a timing takes (settings.CheckTiming): the Caddyfile held
		// only the admin API to it.
		{"queue_ttl 1000d", "queue_ttl 1000d", `"queue_ttl":"1000d"`, `{"queue_ttl":"1000d"}`, "queue_ttl must be at most 720h0m0s, got 24000h0m0s"},
		{"session_ttl 1000d", "session_ttl 1000d", `"session_ttl":"1000d"`, `{"session_ttl":"1000d"}`, "session_ttl must be at most 720h0m0s"},
		{"away_ttl 1000d", "away_ttl 1000d", `"away_ttl":"1000d"`, `{"away_ttl":"1000d"}`, "away_ttl must be at most 720h0m0s"},
		{"session_max 1000d", "session_max 1000d", `"session_max":"1000d"`, `{"session_max":"1000d"}`, "session_max must be at most 720h0m0s"},
		{"join_window 10ms", "max_joins_per_ip 5 10ms", `"per_ip":{"max_joins":5,"join_window":"10ms"}`, "", "join_window must be at least 1s, got 10ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			input := "waiting_room {\n name a\n capacity 1\n " + tc.caddyfile + "\n}"
			var h Handler
			err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasSuffix(err.Error(), ", at Testfile:4") {
				t.Errorf("Caddyfile %q: %v, want %q at line 4", tc.caddyfile, err, tc.wantErr)
			}

			var j Handler
			if err := caddy.StrictUnmarshalJSON([]byte(`{"name":"a","capacity":1,`+tc.json+`}`), &j); err != nil {
				t.Fatalf("loading JSON: %v", err)
			}
			if err := j.Validate(); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("JSON {%s}: %v, want %q", tc.json, err, tc.wantErr)
			}

			if tc.patch == "" {
				return
			}
			tr := newTestRoom(t, 1)
			if _, err := tr.h.room.Patch(context.Background(), []byte(tc.patch)); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("PATCH %s: %v, want %q", tc.patch, err, tc.wantErr)
			}
		})
	}
}

// Each floor itself is taken: the floor is the least that works, not a little more.
func TestDurationFloorsAreTaken(t *testing.T) {
	input := "waiting_room {\n name a\n capacity 1\n queue_ttl 5s\n session_ttl 10s\n session_max 10s\n rate 5 1s\n max_joins_per_ip 5 1s\n away_ttl 5s\n}"
	var h Handler
	if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input)); err != nil {
		t.Fatal(err)
	}
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
	tr := newTestRoom(t, 1)
	tr.patch(`{"queue_ttl":"5s","session_ttl":"10s","session_max":"10s","away_ttl":"5s","rate":{"count":1,"per":"1s"}}`)
}

// A secret shorter than 32 bytes is refused: a short HMAC key is recovered from one
// cookie by brute force, and then anyone can mint admitted visitors and passes.
func TestShortSecretRefused(t *testing.T) {
	t.Setenv("WR_TEST_SHORT_SECRET", "z9")
	t.Setenv("WR_TEST_LONG_SECRET", longSecret)
	t.Setenv("WR_TEST_EMPTY_SECRET", "")
	for _, tc := range []struct {
		name, secret string // the Caddyfile's secret line, on line 4
		wantErr      string // "" when it must parse
	}{
		{"short literal", "secret z9", "secret must be at least 32 bytes, got 2"},
		{"31 bytes", "secret " + longSecret[:31], "secret must be at least 32 bytes, got 31"},
		{"short previous secret", "secret " + longSecret + " old", "previous secret must be at least 32 bytes, got 3"},
		{"short from the environment", "secret {env.WR_TEST_SHORT_SECRET}", "secret {env.WR_TEST_SHORT_SECRET} must be at least 32 bytes, got 2"},
		{"empty from the environment", "secret {env.WR_TEST_EMPTY_SECRET}", "secret {env.WR_TEST_EMPTY_SECRET} is empty: set WR_TEST_EMPTY_SECRET"},
		{"unset in the environment", "secret {env.WR_TEST_UNSET_SECRET}", "secret {env.WR_TEST_UNSET_SECRET} is empty: set WR_TEST_UNSET_SECRET"},
		{"32 bytes", "secret " + longSecret, ""},
		{"from the environment", "secret {env.WR_TEST_LONG_SECRET} " + longSecret, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			input := "waiting_room {\n name a\n capacity 1\n " + tc.secret + "\n}"
			var h Handler
			err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr == "":
				return
			case err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasSuffix(err.Error(), ", at Testfile:4"):
				t.Errorf("%v, want %q at line 4", err, tc.wantErr)
			}
		})
	}
}

// In JSON the secret is checked once its placeholders are expanded, at provision.
func TestShortSecretRefusedAtProvision(t *testing.T) {
	t.Setenv("WR_TEST_SHORT_SECRET", "z9")
	for _, tc := range []struct {
		secret   string
		previous []string
		wantErr  string
	}{
		{"z9", nil, "secret must be at least 32 bytes, got 2"},
		{"{env.WR_TEST_SHORT_SECRET}", nil, "secret {env.WR_TEST_SHORT_SECRET} must be at least 32 bytes, got 2"},
		{"{env.WR_TEST_UNSET_SECRET}", nil, "secret {env.WR_TEST_UNSET_SECRET} is empty"},
		{longSecret, []string{"old"}, "previous secret must be at least 32 bytes, got 3"},
	} {
		h := &Handler{Name: "short-secret-" + strconv.Itoa(len(tc.wantErr)), Capacity: 1, Secret: tc.secret, PreviousSecrets: tc.previous}
		ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
		err := h.Provision(ctx)
		_ = h.Cleanup()
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("secret %q previous %q: %v, want %q", tc.secret, tc.previous, err, tc.wantErr)
		}
	}
}

// A Caddyfile error names the sub-directive as well as the line.
func TestCaddyfileErrorNamesTheSetting(t *testing.T) {
	for _, sub := range []string{"session_ttl", "session_max", "queue_ttl"} {
		for _, value := range []string{"0", "-1s", "soon"} {
			input := "waiting_room {\n name a\n capacity 1\n " + sub + " " + value + "\n}"
			var h Handler
			err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input))
			want := sub + `: bad duration "` + value + `"`
			if err == nil || !strings.Contains(err.Error(), want) || !strings.HasSuffix(err.Error(), ", at Testfile:4") {
				t.Errorf("%s %s: %v, want %q at line 4", sub, value, err, want)
			}
		}
	}
	input := "waiting_room {\n name a\n capacity 1\n event 2030-11-28T09:00:00Z 2030-11-28T10:00:00Z {\n  prequeue 0\n }\n}"
	var h Handler
	if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input)); err == nil || !strings.Contains(err.Error(), `prequeue: bad duration "0"`) {
		t.Errorf("prequeue 0: %v", err)
	}
}

// A template that cannot be read or parsed is refused where the Caddyfile names it.
func TestCaddyfileTemplateChecked(t *testing.T) {
	dir := t.TempDir()
	broken := dir + "/broken.html"
	writeFile(t, broken, "{{ .Nope")
	for _, tc := range []struct{ path, wantErr string }{
		{dir + "/missing.html", "reading template"},
		{broken, "parsing template " + broken},
	} {
		input := "waiting_room {\n name a\n capacity 1\n template " + tc.path + "\n}"
		var h Handler
		err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input))
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasSuffix(err.Error(), ", at Testfile:4") {
			t.Errorf("template %s: %v, want %q at line 4", tc.path, err, tc.wantErr)
		}
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
