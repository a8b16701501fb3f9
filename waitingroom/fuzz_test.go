package waitingroom

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// The fuzz targets of this package. Each has a seed corpus under testdata/fuzz/<name>/,
// which plain `go test` runs as regression tests; `go test -fuzz` explores from there.

var (
	fuzzNow    = time.Unix(1_800_000_000, 0)
	fuzzSecret = []byte("fuzz-secret")
)

// errLine is how a Caddyfile error says where it is.
var errLine = regexp.MustCompile(`, at Testfile:(\d+)$`)

// Any waiting_room block either parses into a configuration that Validate accepts, or
// fails with an error that points at a line of the input. It never panics.
func FuzzUnmarshalCaddyfile(f *testing.F) {
	f.Add("waiting_room {\n name tickets\n capacity 100\n}")
	f.Add("waiting_room {\n name a\n capacity 0\n}")
	f.Add("waiting_room")
	f.Fuzz(func(t *testing.T, input string) {
		if len(input) > 4096 {
			return // the lexer is caddy's; keep each run short
		}
		tokens, err := caddyfile.Tokenize([]byte(input), "Testfile")
		if err != nil || len(tokens) == 0 || tokens[0].Text != "waiting_room" {
			return // httpcaddyfile only hands us a block that starts with the directive
		}
		var h Handler
		err = h.UnmarshalCaddyfile(caddyfile.NewDispenser(tokens))
		if err != nil {
			m := errLine.FindStringSubmatch(err.Error())
			if m == nil {
				t.Fatalf("error without a line: %v", err)
			}
			lines := 1 + strings.Count(input, "\n")
			if n, _ := strconv.Atoi(m[1]); n < 1 || n > lines {
				t.Fatalf("error points at line %d of a %d-line input: %v", n, lines, err)
			}
			return
		}
		if err := h.Validate(); err != nil {
			t.Fatalf("the Caddyfile parsed but the result is invalid: %v\nparsed: %+v", err, h)
		}
	})
}

// The admin API's PATCH body goes straight into Room.Patch. A body it rejects is an
// *inputError and changes nothing; a body it accepts is one JSON object and leaves a
// positive effective capacity.
func FuzzRoomPatch(f *testing.F) {
	for _, s := range []string{
		`{"capacity": 20}`, `{"capacity": null}`, `{}`, `{"capacity": 0}`, `{"capacity": "5"}`,
		`{"capacity": 1.5}`, `{"colour": 1}`, `[]`, `null`, `{"capacity": 3} {}`, ``,
		`{"session_max": "20m"}`, `{"session_max": "off"}`, `{"session_max": null}`, `{"session_max": "0"}`,
		`{"queue_ttl": "2m", "away_ttl": "0"}`, `{"away_ttl": "1s"}`, `{"session_ttl": 5}`, `{"queue_ttl": "99999h"}`,
	} {
		f.Add([]byte(s))
	}
	tr := newTestRoom(f, 2)
	ctl := tr.h.room
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > 64<<10 {
			return // the admin module refuses bodies past 64 KiB before Patch sees them
		}
		before := tr.h.room.Settings(tr.clock.Now()).Capacity
		doc, _ := tr.h.store.Overrides(ctx)
		info, err := ctl.Patch(ctx, body)
		if err != nil {
			var input room.InputError
			if !errors.As(err, &input) {
				t.Fatalf("Patch(%q): %v is not the caller's error (the memory store cannot fail)", body, err)
			}
			after, _ := tr.h.store.Overrides(ctx)
			if tr.h.room.Settings(tr.clock.Now()).Capacity != before || !bytes.Equal(doc, after) {
				t.Fatalf("rejected Patch(%q) changed the room: capacity %d -> %d, overrides %s -> %s",
					body, before, tr.h.room.Settings(tr.clock.Now()).Capacity, doc, after)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("Patch accepted %q, which is not JSON", body)
		}
		if info.Capacity != tr.h.room.Settings(tr.clock.Now()).Capacity || info.Capacity <= 0 {
			t.Fatalf("Patch(%q) reports capacity %d, the room runs with %d", body, info.Capacity, tr.h.room.Settings(tr.clock.Now()).Capacity)
		}
	})
}
