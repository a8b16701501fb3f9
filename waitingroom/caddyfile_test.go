package waitingroom

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

func on() *bool  { v := true; return &v }
func off() *bool { v := false; return &v }

// oldSecret is a previous secret long enough to be taken.
const oldSecret = "an-old-secret-of-at-least-32-bytes"

func TestUnmarshalCaddyfile(t *testing.T) {
	// The secret is checked where the Caddyfile is adapted, and the template read.
	t.Setenv("WAITING_ROOM_SECRET", longSecret)
	tmpl := filepath.Join(t.TempDir(), "waiting.html")
	writeFile(t, tmpl, "<p>{{.Position}}</p>")
	for _, tc := range []struct {
		name  string
		input string
		want  Handler
	}{
		{
			name: "per-address caps",
			input: `waiting_room {
				name tickets
				capacity 100
				max_joins_per_ip 5 30s
				max_connections_per_ip 3
			}`,
			want: Handler{Name: "tickets", Capacity: 100, PerIP: &PerIP{MaxJoins: 5, JoinWindow: caddy.Duration(30 * time.Second), MaxConnections: 3}},
		},
		{
			name: "max_joins_per_ip with the default window",
			input: `waiting_room {
				name tickets
				capacity 100
				max_joins_per_ip 5
			}`,
			want: Handler{Name: "tickets", Capacity: 100, PerIP: &PerIP{MaxJoins: 5}},
		},
		{
			name: "draw page at a path of the room's",
			input: `waiting_room {
				name drop
				capacity 50
				draw_page /drop/draw
			}`,
			want: Handler{Name: "drop", Capacity: 50, DrawPage: "/drop/draw"},
		},
		{
			name: "draw page off",
			input: `waiting_room {
				name drop
				capacity 50
				draw_page off
			}`,
			want: Handler{Name: "drop", Capacity: 50, DrawPage: "off"},
		},
		{
			name: "invite_only",
			input: `waiting_room {
				name presale
				capacity 50
				mode invite_only
			}`,
			want: Handler{Name: "presale", Capacity: 50, Mode: "invite_only"},
		},
		{
			name: "name and capacity only",
			input: `waiting_room {
				name tickets
				capacity 100
			}`,
			want: Handler{Name: "tickets", Capacity: 100},
		},
		{
			name: "message",
			input: `waiting_room {
				name tickets
				capacity 100
				message "We open at 10:00. <b>Not bold</b>"
			}`,
			want: Handler{Name: "tickets", Capacity: 100, Message: "We open at 10:00. <b>Not bold</b>"},
		},
		{
			name: "every sub-directive",
			input: `waiting_room {
				name tickets
				capacity 100
				session_ttl 10m
				session_max 20m
				queue_ttl 30s
				away_ttl 0
				status_code 503
				fail closed
				secret {env.WAITING_ROOM_SECRET} OLD-1 OLD-2
				template /etc/caddy/waiting.html
				cookie {
					name wr_tickets
					domain example.com
					path /shop
					same_site strict
					secure on
					http_only off
				}
				store memory
			}`,
			want: Handler{
				Name:            "tickets",
				Capacity:        100,
				SessionTTL:      caddy.Duration(10 * time.Minute),
				SessionMax:      caddy.Duration(20 * time.Minute),
				QueueTTL:        caddy.Duration(30 * time.Second),
				AwayTTL:         new(caddy.Duration),
				StatusCode:      503,
				Fail:            "closed",
				Secret:          "{env.WAITING_ROOM_SECRET}",
				PreviousSecrets: []string{oldSecret + "-1", oldSecret + "-2"},
				Template:        "/etc/caddy/waiting.html",
				Cookie: &token.Cookie{
					Name:     "wr_tickets",
					Domain:   "example.com",
					Path:     "/shop",
					SameSite: "strict",
					Secure:   on(),
					HTTPOnly: off(),
				},
				StoreRaw: json.RawMessage(`{"type":"memory"}`),
			},
		},
		{
			name: "order of sub-directives does not matter",
			input: `waiting_room {
				store memory
				cookie {
					path /
				}
				capacity 1
				name last
			}`,
			want: Handler{
				Name:     "last",
				Capacity: 1,
				Cookie:   &token.Cookie{Path: "/"},
				StoreRaw: json.RawMessage(`{"type":"memory"}`),
			},
		},
		{
			name: "secret without previous secrets",
			input: `waiting_room {
				name a
				capacity 1
				secret 0123456789abcdef0123456789abcdef
			}`,
			want: Handler{Name: "a", Capacity: 1, Secret: longSecret},
		},
		{
			name: "bare secure means on, http_only off means off",
			input: `waiting_room {
				name a
				capacity 1
				cookie {
					secure
					http_only off
				}
			}`,
			want: Handler{Name: "a", Capacity: 1, Cookie: &token.Cookie{Secure: on(), HTTPOnly: off()}},
		},
		{
			name: "secure true, bare http_only, same_site none",
			input: `waiting_room {
				name a
				capacity 1
				cookie {
					same_site none
					secure true
					http_only
				}
			}`,
			want: Handler{Name: "a", Capacity: 1, Cookie: &token.Cookie{SameSite: "none", Secure: on(), HTTPOnly: on()}},
		},
		{
			name: "secure off, http_only false, same_site lax",
			input: `waiting_room {
				name a
				capacity 1
				cookie {
					same_site lax
					secure off
					http_only false
				}
			}`,
			want: Handler{Name: "a", Capacity: 1, Cookie: &token.Cookie{SameSite: "lax", Secure: off(), HTTPOnly: off()}},
		},
		{
			name: "empty cookie block",
			input: `waiting_room {
				name a
				capacity 1
				cookie {
				}
			}`,
			want: Handler{Name: "a", Capacity: 1, Cookie: &token.Cookie{}},
		},
		{
			name: "store memory with an empty block, then more sub-directives",
			input: `waiting_room {
				name a
				store memory {
				}
				capacity 7
				fail open
			}`,
			want: Handler{Name: "a", Capacity: 7, Fail: "open", StoreRaw: json.RawMessage(`{"type":"memory"}`)},
		},
		{
			name: "store memory with its file moved and saved less often",
			input: `waiting_room {
				name a
				capacity 7
				store memory {
					file /var/lib/shop/room.state
					save_every 5s
				}
			}`,
			want: Handler{Name: "a", Capacity: 7,
				StoreRaw: json.RawMessage(`{"file":"/var/lib/shop/room.state","save_every":5000000000,"type":"memory"}`)},
		},
		{
			name: "store memory kept in memory only",
			input: `waiting_room {
				name a
				capacity 7
				store memory {
					file off
				}
			}`,
			want: Handler{Name: "a", Capacity: 7, StoreRaw: json.RawMessage(`{"file":"off","type":"memory"}`)},
		},
		{
			name: "status code 429",
			input: `waiting_room {
				name a
				capacity 1
				status_code 429
			}`,
			want: Handler{Name: "a", Capacity: 1, StatusCode: 429},
		},
		{
			name: "rate and mode",
			input: `waiting_room {
				name a
				capacity 100
				rate 10 1s
				mode random
			}`,
			want: Handler{Name: "a", Capacity: 100, Rate: &Rate{Count: 10, Per: caddy.Duration(time.Second)}, Mode: "random"},
		},
		{
			name: "two events",
			input: `waiting_room {
				name a
				capacity 100
				event 2030-11-28T09:00:00Z 2030-11-28T12:00:00Z {
					prequeue 30m
					shuffle
					capacity 500
					rate 50 1s
					mode fifo
				}
				event 2030-11-29T09:00:00+09:00 2030-11-29T10:00:00+09:00
			}`,
			want: Handler{Name: "a", Capacity: 100, Events: []Event{
				{
					Start: time.Date(2030, 11, 28, 9, 0, 0, 0, time.UTC), End: time.Date(2030, 11, 28, 12, 0, 0, 0, time.UTC),
					Prequeue: caddy.Duration(30 * time.Minute), Shuffle: true, Capacity: 500,
					Rate: &Rate{Count: 50, Per: caddy.Duration(time.Second)}, Mode: "fifo",
				},
				{
					Start: time.Date(2030, 11, 29, 9, 0, 0, 0, time.FixedZone("", 9*3600)),
					End:   time.Date(2030, 11, 29, 10, 0, 0, 0, time.FixedZone("", 9*3600)),
				},
			}},
		},
		{
			name: "durations in Caddy's units",
			input: `waiting_room {
				name a
				capacity 1
				session_ttl 1d
				queue_ttl 5500ms
			}`,
			want: Handler{
				Name:       "a",
				Capacity:   1,
				SessionTTL: caddy.Duration(24 * time.Hour),
				QueueTTL:   caddy.Duration(5500 * time.Millisecond),
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			input := strings.NewReplacer("OLD-1", oldSecret+"-1", "OLD-2", oldSecret+"-2", "/etc/caddy/waiting.html", tmpl).Replace(tc.input)
			if tc.want.Template != "" {
				tc.want.Template = tmpl
			}
			var got Handler
			if err := got.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input)); err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			assertSameConfig(t, got, tc.want)

			// What the Caddyfile produces must pass the JSON path's validation and
			// survive a JSON round trip unchanged: every sub-directive has a JSON twin.
			if err := got.Validate(); err != nil {
				t.Errorf("parsed config fails Validate: %v", err)
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var back Handler
			if err := caddy.StrictUnmarshalJSON(b, &back); err != nil {
				t.Fatalf("JSON %s does not load back: %v", b, err)
			}
			assertSameConfig(t, back, got)
		})
	}
}

// assertSameConfig compares two handlers' configuration; the store is compared as
// JSON, not byte for byte.
func assertSameConfig(t *testing.T, got, want Handler) {
	t.Helper()
	gotStore, wantStore := got.StoreRaw, want.StoreRaw
	got.StoreRaw, want.StoreRaw = nil, nil
	// No previous secrets is no previous secrets, whether nil or empty.
	if len(got.PreviousSecrets) == 0 && len(want.PreviousSecrets) == 0 {
		got.PreviousSecrets, want.PreviousSecrets = nil, nil
	}
	// Where the Caddyfile named the cookie is for the adapter's check, not config.
	got.cookieNamedAt, want.cookieNamedAt = "", ""
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Errorf("config differs\n got: %s\nwant: %s", g, w)
	}
	if (gotStore == nil) != (wantStore == nil) {
		t.Fatalf("store: got %s, want %s", gotStore, wantStore)
	}
	if gotStore != nil {
		var g, w any
		if err := json.Unmarshal(gotStore, &g); err != nil {
			t.Fatalf("store is not JSON: %s", gotStore)
		}
		_ = json.Unmarshal(wantStore, &w)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("store: got %s, want %s", gotStore, wantStore)
		}
	}
}

func TestUnmarshalCaddyfileErrors(t *testing.T) {
	// Every input starts with `waiting_room` on line 1, so line numbers read off the
	// literal directly.
	for _, tc := range []struct {
		name    string
		input   string
		wantErr string // part of the message that names the problem
		line    int
	}{
		{
			name:    "name dashboard",
			input:   "waiting_room {\n capacity 1\n name dashboard\n}",
			wantErr: `name "dashboard" is reserved`,
			line:    3,
		},
		{
			name:    "away_ttl below queue_ttl, named on its own line",
			input:   "waiting_room {\n name a\n away_ttl 90s\n capacity 1\n queue_ttl 2m\n}",
			wantErr: "away_ttl (1m30s) must be 0 or at least queue_ttl (2m0s): a quiet waiter is kept at least as long as a present one",
			line:    3,
		},
		{
			name:    "away_ttl below the default queue_ttl",
			input:   "waiting_room {\n name a\n capacity 1\n away_ttl 30s\n}",
			wantErr: "away_ttl (30s) must be 0 or at least queue_ttl (1m0s): a quiet waiter is kept at least as long as a present one",
			line:    4,
		},
		{
			name:    "away_ttl negative",
			input:   "waiting_room {\n name a\n capacity 1\n away_ttl -5m\n}",
			wantErr: `bad duration "-5m": want 0 or a positive duration`,
			line:    4,
		},
		{
			name:    "message too long",
			input:   "waiting_room {\n name a\n capacity 1\n message " + strings.Repeat("x", 501) + "\n}",
			wantErr: "message must be at most 500 characters, got 501",
			line:    4,
		},
		{
			name:    "message without text",
			input:   "waiting_room {\n name a\n capacity 1\n message\n}",
			wantErr: "wrong argument count",
			line:    4,
		},
		{
			name:    "draw page not a path",
			input:   "waiting_room {\n name a\n capacity 1\n draw_page draw\n}",
			wantErr: `draw_page must be off or a path such as /draw, without a query or a trailing slash, got "draw"`,
			line:    4,
		},
		{
			name:    "draw page with a query",
			input:   "waiting_room {\n name a\n draw_page /draw?x=1\n capacity 1\n}",
			wantErr: `draw_page must be off or a path such as /draw`,
			line:    3,
		},
		{
			name:    "draw page twice",
			input:   "waiting_room {\n name a\n capacity 1\n draw_page /a\n draw_page /b\n}",
			wantErr: `duplicate subdirective "draw_page"`,
			line:    5,
		},
		{
			name:    "capacity 0",
			input:   "waiting_room {\n name a\n capacity 0\n}",
			wantErr: `capacity must be a whole number greater than 0, got "0"`,
			line:    3,
		},
		{
			name:    "capacity -1",
			input:   "waiting_room {\n name a\n capacity -1\n}",
			wantErr: `capacity must be a whole number greater than 0, got "-1"`,
			line:    3,
		},
		{
			name:    "capacity many",
			input:   "waiting_room {\n name a\n\n capacity many\n}",
			wantErr: `capacity must be a whole number greater than 0, got "many"`,
			line:    4,
		},
		{
			name:    "capacity without a value",
			input:   "waiting_room {\n name a\n capacity\n}",
			wantErr: "wrong argument count or unexpected line ending after 'capacity'",
			line:    3,
		},
		{
			name:    "missing name points at the directive",
			input:   "waiting_room {\n capacity 1\n}",
			wantErr: "waiting_room needs a name (add `name <name>` to the block)",
			line:    1,
		},
		{
			name:    "missing capacity points at the directive",
			input:   "waiting_room {\n name a\n}",
			wantErr: "waiting_room needs a capacity (add `capacity <n>` to the block)",
			line:    1,
		},
		{
			name:    "no block at all",
			input:   "waiting_room",
			wantErr: "waiting_room needs a name",
			line:    1,
		},
		{
			name:    "unknown sub-directive",
			input:   "waiting_room {\n name a\n capacity 1\n colour blue\n}",
			wantErr: `unrecognized subdirective "colour"`,
			line:    4,
		},
		{
			name:    "duplicate sub-directive points at the second",
			input:   "waiting_room {\n name a\n capacity 1\n name b\n}",
			wantErr: `duplicate subdirective "name"`,
			line:    4,
		},
		{
			name:    "duplicate cookie block",
			input:   "waiting_room {\n name a\n capacity 1\n cookie {\n path /\n }\n cookie {\n path /x\n }\n}",
			wantErr: `duplicate subdirective "cookie"`,
			line:    7,
		},
		{
			name:    "duration in words",
			input:   "waiting_room {\n name a\n capacity 1\n session_ttl 5 minutes\n}",
			wantErr: "wrong argument count or unexpected line ending after 'minutes'",
			line:    4,
		},
		{
			name:    "duration in words, quoted",
			input:   "waiting_room {\n name a\n capacity 1\n session_ttl \"5 minutes\"\n}",
			wantErr: `bad duration "5 minutes": want a positive duration such as 30s or 5m`,
			line:    4,
		},
		{
			name:    "negative duration",
			input:   "waiting_room {\n name a\n capacity 1\n queue_ttl -1s\n}",
			wantErr: `bad duration "-1s": want a positive duration`,
			line:    4,
		},
		{
			name:    "session_max 0",
			input:   "waiting_room {\n name a\n capacity 1\n session_max 0\n}",
			wantErr: `bad duration "0": want a positive duration such as 30s or 5m`,
			line:    4,
		},
		{
			name:    "negative session_max",
			input:   "waiting_room {\n name a\n capacity 1\n\n session_max -5m\n}",
			wantErr: `bad duration "-5m": want a positive duration`,
			line:    5,
		},
		{
			name:    "session_max without a duration",
			input:   "waiting_room {\n name a\n capacity 1\n session_max\n}",
			wantErr: "wrong argument count",
			line:    4,
		},
		{
			name:    "duplicate session_max",
			input:   "waiting_room {\n name a\n capacity 1\n session_max 10m\n session_max 20m\n}",
			wantErr: `duplicate subdirective "session_max"`,
			line:    5,
		},
		{
			name:    "zero duration",
			input:   "waiting_room {\n name a\n capacity 1\n queue_ttl 0s\n}",
			wantErr: `bad duration "0s"`,
			line:    4,
		},
		{
			name:    "status_code 99",
			input:   "waiting_room {\n name a\n capacity 1\n status_code 99\n}",
			wantErr: `status_code must be one of 200, 202, 429 or 503, got "99"`,
			line:    4,
		},
		{
			name:    "status_code 600",
			input:   "waiting_room {\n name a\n capacity 1\n status_code 600\n}",
			wantErr: `status_code must be one of 200, 202, 429 or 503, got "600"`,
			line:    4,
		},
		{
			name:    "status_code abc",
			input:   "waiting_room {\n name a\n capacity 1\n status_code abc\n}",
			wantErr: `status_code must be one of 200, 202, 429 or 503, got "abc"`,
			line:    4,
		},
		{
			name:    "status_code 500 (not a waiting answer)",
			input:   "waiting_room {\n name a\n capacity 1\n status_code 500\n}",
			wantErr: `status_code must be one of 200, 202, 429 or 503, got "500"`,
			line:    4,
		},
		{
			name:    "rate without a window",
			input:   "waiting_room {\n name a\n capacity 1\n rate 10\n}",
			wantErr: "wrong argument count",
			line:    4,
		},
		{
			name:    "rate 0",
			input:   "waiting_room {\n name a\n capacity 1\n rate 0 1s\n}",
			wantErr: `rate count must be a whole number greater than 0, got "0"`,
			line:    4,
		},
		{
			name:    "rate bad window",
			input:   "waiting_room {\n name a\n capacity 1\n rate 5 soon\n}",
			wantErr: `bad rate window "soon"`,
			line:    4,
		},
		{
			name:    "invite_only with an argument",
			input:   "waiting_room {\n name a\n capacity 1\n mode invite_only please\n}",
			wantErr: "wrong argument count",
			line:    4,
		},
		{
			name:    "invite only misspelt",
			input:   "waiting_room {\n name a\n capacity 1\n mode invite-only\n}",
			wantErr: `mode must be one of fifo, random, passthrough, reject, queue_all, suspended, invite_only, got "invite-only"`,
			line:    4,
		},
		{
			name:    "unknown mode",
			input:   "waiting_room {\n name a\n capacity 1\n mode lifo\n}",
			wantErr: `mode must be one of fifo, random, passthrough, reject, queue_all, suspended, invite_only, got "lifo"`,
			line:    4,
		},
		{
			name:    "event time not RFC 3339",
			input:   "waiting_room {\n name a\n capacity 1\n event 2030-11-28 2030-11-29\n}",
			wantErr: `bad event time "2030-11-28"`,
			line:    4,
		},
		{
			name:    "event ends before it starts",
			input:   "waiting_room {\n name a\n capacity 1\n event 2030-11-28T10:00:00Z 2030-11-28T09:00:00Z\n}",
			wantErr: "is not after its start",
			line:    4,
		},
		{
			name:    "event with one time",
			input:   "waiting_room {\n name a\n capacity 1\n event 2030-11-28T10:00:00Z\n}",
			wantErr: "event needs a start and an end",
			line:    4,
		},
		{
			name: "events overlap through a pre-queue",
			input: "waiting_room {\n name a\n capacity 1\n event 2030-11-28T09:00:00Z 2030-11-28T10:00:00Z\n" +
				" event 2030-11-28T11:00:00Z 2030-11-28T12:00:00Z {\n  prequeue 90m\n }\n}",
			wantErr: "event 2 (2030-11-28T11:00:00Z) overlaps event 1 (2030-11-28T09:00:00Z)",
			line:    7,
		},
		{
			name:    "unknown event option",
			input:   "waiting_room {\n name a\n capacity 1\n event 2030-11-28T09:00:00Z 2030-11-28T10:00:00Z {\n  lottery\n }\n}",
			wantErr: `unrecognized event option "lottery"`,
			line:    5,
		},
		{
			name:    "event mode unknown",
			input:   "waiting_room {\n name a\n capacity 1\n event 2030-11-28T09:00:00Z 2030-11-28T10:00:00Z {\n  mode sometimes\n }\n}",
			wantErr: `mode must be one of`,
			line:    5,
		},
		{
			name:    "status_code 199 (informational is not a page)",
			input:   "waiting_room {\n name a\n capacity 1\n status_code 199\n}",
			wantErr: `got "199"`,
			line:    4,
		},
		{
			name:    "fail maybe",
			input:   "waiting_room {\n name a\n capacity 1\n fail maybe\n}",
			wantErr: `fail must be open or closed, got "maybe"`,
			line:    4,
		},
		{
			name:    "fail without a value",
			input:   "waiting_room {\n name a\n capacity 1\n fail\n}",
			wantErr: "wrong argument count or unexpected line ending after 'fail'",
			line:    4,
		},
		{
			name:    "name with two words",
			input:   "waiting_room {\n name a b\n capacity 1\n}",
			wantErr: "wrong argument count or unexpected line ending after 'b'",
			line:    2,
		},
		{
			name:    "capacity with two values",
			input:   "waiting_room {\n name a\n capacity 1 2\n}",
			wantErr: "wrong argument count or unexpected line ending after '2'",
			line:    3,
		},
		{
			name:    "secret without a value",
			input:   "waiting_room {\n name a\n capacity 1\n secret\n}",
			wantErr: "wrong argument count or unexpected line ending after 'secret'",
			line:    4,
		},
		{
			name:    "template with two files",
			input:   "waiting_room {\n name a\n capacity 1\n template a.html b.html\n}",
			wantErr: "wrong argument count or unexpected line ending after 'b.html'",
			line:    4,
		},
		{
			name:    "cookie unknown option",
			input:   "waiting_room {\n name a\n capacity 1\n cookie {\n max_age 1h\n }\n}",
			wantErr: `unrecognized cookie option "max_age"`,
			line:    5,
		},
		{
			name:    "cookie duplicate option",
			input:   "waiting_room {\n name a\n capacity 1\n cookie {\n path /a\n path /b\n }\n}",
			wantErr: `duplicate cookie option "path"`,
			line:    6,
		},
		{
			name:    "cookie with an argument",
			input:   "waiting_room {\n name a\n capacity 1\n cookie wr {\n path /\n }\n}",
			wantErr: "wrong argument count or unexpected line ending after 'wr'",
			line:    4,
		},
		{
			name:    "same_site bogus",
			input:   "waiting_room {\n name a\n capacity 1\n cookie {\n same_site bogus\n }\n}",
			wantErr: `same_site must be lax, strict or none, got "bogus"`,
			line:    5,
		},
		{
			name:    "cookie name with a space",
			input:   "waiting_room {\n name a\n capacity 1\n cookie {\n name \"wr tickets\"\n }\n}",
			wantErr: `cookie name "wr tickets": only letters, digits, '-' and '_' are allowed`,
			line:    5,
		},
		{
			name:    "cookie name with a semicolon",
			input:   "waiting_room {\n name a\n capacity 1\n cookie {\n name wr;x\n }\n}",
			wantErr: `cookie name "wr;x": only letters, digits, '-' and '_' are allowed`,
			line:    5,
		},
		{
			name:    "cookie path not absolute",
			input:   "waiting_room {\n name a\n capacity 1\n cookie {\n path shop\n }\n}",
			wantErr: `cookie path must start with '/', got "shop"`,
			line:    5,
		},
		{
			name:    "cookie secure maybe",
			input:   "waiting_room {\n name a\n capacity 1\n cookie {\n secure maybe\n }\n}",
			wantErr: `want on or off, got "maybe"`,
			line:    5,
		},
		{
			name:    "cookie http_only with two values",
			input:   "waiting_room {\n name a\n capacity 1\n cookie {\n http_only on off\n }\n}",
			wantErr: "wrong argument count or unexpected line ending after 'off'",
			line:    5,
		},
		{
			name:    "store with no argument",
			input:   "waiting_room {\n name a\n capacity 1\n store\n}",
			wantErr: "wrong argument count or unexpected line ending after 'store'",
			line:    4,
		},
		{
			name:    "store nosuch",
			input:   "waiting_room {\n name a\n capacity 1\n store nosuch\n}",
			wantErr: "getting module named 'http.handlers.waiting_room.stores.nosuch': module not registered",
			line:    4,
		},
		{
			name:    "store module without a Caddyfile syntax",
			input:   "waiting_room {\n name a\n capacity 1\n store counting_test\n}",
			wantErr: "module http.handlers.waiting_room.stores.counting_test is not a Caddyfile unmarshaler",
			line:    4,
		},
		{
			name:    "store memory extra",
			input:   "waiting_room {\n name a\n capacity 1\n store memory extra\n}",
			wantErr: "wrong argument count or unexpected line ending after 'extra'",
			line:    4,
		},
		{
			name:    "store memory with an option, one line",
			input:   "waiting_room {\n name a\n capacity 1\n store memory { x }\n}",
			wantErr: `unrecognized memory store option "x"`,
			line:    4,
		},
		{
			name:    "store memory with an option block",
			input:   "waiting_room {\n name a\n capacity 1\n store memory {\n  x 1\n }\n}",
			wantErr: `unrecognized memory store option "x"`,
			line:    5,
		},
		{
			name:    "store memory file without a path",
			input:   "waiting_room {\n name a\n capacity 1\n store memory {\n  file\n }\n}",
			wantErr: "file takes a path, or off",
			line:    5,
		},
		{
			name:    "store memory file with two paths",
			input:   "waiting_room {\n name a\n capacity 1\n store memory {\n  file a b\n }\n}",
			wantErr: "wrong argument count or unexpected line ending after 'b'",
			line:    5,
		},
		{
			name:    "store memory save_every 0",
			input:   "waiting_room {\n name a\n capacity 1\n store memory {\n  save_every 0\n }\n}",
			wantErr: `save_every must be a positive duration, got "0"`,
			line:    5,
		},
		{
			name:    "store memory save_every not a duration",
			input:   "waiting_room {\n name a\n capacity 1\n store memory {\n\n  save_every often\n }\n}",
			wantErr: `save_every must be a positive duration, got "often"`,
			line:    6,
		},
		{
			name:    "max_joins_per_ip 0",
			input:   "waiting_room {\n name a\n capacity 1\n max_joins_per_ip 0\n}",
			wantErr: `max_joins_per_ip must be a whole number greater than 0, got "0"`,
			line:    4,
		},
		{
			name:    "max_joins_per_ip not a number",
			input:   "waiting_room {\n name a\n capacity 1\n max_joins_per_ip many\n}",
			wantErr: `max_joins_per_ip must be a whole number greater than 0, got "many"`,
			line:    4,
		},
		{
			name:    "max_joins_per_ip bad window",
			input:   "waiting_room {\n name a\n capacity 1\n max_joins_per_ip 5 -1s\n}",
			wantErr: `bad window "-1s": want a positive duration such as 1m`,
			line:    4,
		},
		{
			name:    "max_joins_per_ip too many arguments",
			input:   "waiting_room {\n name a\n capacity 1\n max_joins_per_ip 5 1m 2\n}",
			wantErr: "wrong argument count",
			line:    4,
		},
		{
			name:    "max_connections_per_ip 0",
			input:   "waiting_room {\n name a\n capacity 1\n max_connections_per_ip 0\n}",
			wantErr: `max_connections_per_ip must be a whole number greater than 0, got "0"`,
			line:    4,
		},
		{
			name:    "max_connections_per_ip without a number",
			input:   "waiting_room {\n name a\n capacity 1\n max_connections_per_ip\n}",
			wantErr: "wrong argument count",
			line:    4,
		},
		{
			name:    "argument after waiting_room",
			input:   "waiting_room tickets {\n name a\n capacity 1\n}",
			wantErr: "wrong argument count or unexpected line ending after 'tickets'",
			line:    1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) { checkCaddyfileError(t, tc.input, tc.wantErr, tc.line) })
	}
}

// checkCaddyfileError parses input, which must fail with an error naming the problem
// (containing wantErr) and pointing at line.
func checkCaddyfileError(t *testing.T, input, wantErr string, line int) {
	t.Helper()
	var h Handler
	err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input))
	if err == nil {
		t.Fatalf("no error; parsed %+v", h)
	}
	msg := err.Error()
	if !strings.Contains(msg, wantErr) {
		t.Errorf("error does not name the problem\n got: %s\nwant: …%s…", msg, wantErr)
	}
	if at := ", at Testfile:" + strconv.Itoa(line); !strings.HasSuffix(msg, at) {
		t.Errorf("error does not point at line %d\n got: %s", line, msg)
	}
}

// TestValidate covers the JSON path, where no Caddyfile parser stands in front of the
// config: Validate alone must catch what the parser would have.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		json    string
		wantErr string // "" means valid
	}{
		{name: "minimal", json: `{"name":"a","capacity":1}`},
		{name: "everything", json: `{"name":"a","capacity":5,"session_ttl":"10m","queue_ttl":30000000000,
			"status_code":503,"fail":"closed","secret":"s","previous_secrets":["p"],
			"cookie":{"name":"wr","path":"/","same_site":"none","secure":true,"http_only":false},
			"store":{"type":"memory"}}`},
		{name: "draw page", json: `{"name":"a","capacity":1,"draw_page":"/a/draw"}`},
		{name: "draw page off", json: `{"name":"a","capacity":1,"draw_page":"off"}`},
		{name: "draw page relative", json: `{"name":"a","capacity":1,"draw_page":"draw"}`, wantErr: `draw_page must be off or a path such as /draw`},
		{name: "capacity 0", json: `{"name":"a","capacity":0}`, wantErr: "capacity must be greater than 0, got 0"},
		{name: "capacity missing", json: `{"name":"a"}`, wantErr: "capacity must be greater than 0, got 0"},
		{name: "capacity -1", json: `{"name":"a","capacity":-1}`, wantErr: "capacity must be greater than 0, got -1"},
		{name: "missing name", json: `{"capacity":1}`, wantErr: "name is required"},
		{name: "fail maybe", json: `{"name":"a","capacity":1,"fail":"maybe"}`, wantErr: `fail must be open or closed, got "maybe"`},
		{name: "status 99", json: `{"name":"a","capacity":1,"status_code":99}`, wantErr: "status_code must be one of 200, 202, 429 or 503, got \"99\""},
		{name: "status 600", json: `{"name":"a","capacity":1,"status_code":600}`, wantErr: "status_code must be one of 200, 202, 429 or 503, got \"600\""},
		{name: "status 302", json: `{"name":"a","capacity":1,"status_code":302}`, wantErr: "status_code must be one of 200, 202, 429 or 503, got \"302\""},
		{name: "rate and mode", json: `{"name":"a","capacity":1,"rate":{"count":10,"per":"1m"},"mode":"queue_all"}`},
		{name: "rate without window", json: `{"name":"a","capacity":1,"rate":{"count":10}}`, wantErr: "rate window must be a positive duration"},
		{name: "bad mode", json: `{"name":"a","capacity":1,"mode":"FIFO"}`, wantErr: `mode must be one of`},
		{name: "events", json: `{"name":"a","capacity":1,"events":[{"start":"2030-11-28T09:00:00Z","end":"2030-11-28T10:00:00Z","prequeue":"10m","shuffle":true,"capacity":5}]}`},
		{name: "overlapping events", json: `{"name":"a","capacity":1,"events":[{"start":"2030-11-28T09:00:00Z","end":"2030-11-28T10:00:00Z"},{"start":"2030-11-28T09:30:00Z","end":"2030-11-28T11:00:00Z"}]}`, wantErr: "event 2 (2030-11-28T09:30:00Z) overlaps event 1"},
		{name: "event without end", json: `{"name":"a","capacity":1,"events":[{"start":"2030-11-28T09:00:00Z"}]}`, wantErr: "event 1: an event needs a start and an end"},
		{name: "negative session_ttl", json: `{"name":"a","capacity":1,"session_ttl":"-1s"}`, wantErr: "session_ttl must be greater than 0, got -1s"},
		{name: "session_max", json: `{"name":"a","capacity":1,"session_max":"15m"}`},
		{name: "negative session_max", json: `{"name":"a","capacity":1,"session_max":"-1s"}`, wantErr: "session_max must be 0 (off) or a positive duration, got -1s"},
		{name: "negative queue_ttl", json: `{"name":"a","capacity":1,"queue_ttl":-1}`, wantErr: "queue_ttl must be greater than 0"},
		{name: "away_ttl off", json: `{"name":"a","capacity":1,"away_ttl":0}`},
		{name: "away_ttl 20m", json: `{"name":"a","capacity":1,"queue_ttl":"2m","away_ttl":"20m"}`},
		{name: "away_ttl below queue_ttl", json: `{"name":"a","capacity":1,"queue_ttl":"2m","away_ttl":"90s"}`, wantErr: "away_ttl (1m30s) must be 0 or at least queue_ttl (2m0s): a quiet waiter is kept at least as long as a present one"},
		{name: "away_ttl below the default queue_ttl", json: `{"name":"a","capacity":1,"away_ttl":"30s"}`, wantErr: "away_ttl (30s) must be 0 or at least queue_ttl (1m0s): a quiet waiter is kept at least as long as a present one"},
		{name: "negative away_ttl", json: `{"name":"a","capacity":1,"away_ttl":"-1m"}`, wantErr: "away_ttl must be 0 (off) or a positive duration, got -1m0s"},
		{name: "bad cookie name", json: `{"name":"a","capacity":1,"cookie":{"name":"a b"}}`, wantErr: `cookie: name "a b": only letters, digits, '-' and '_' are allowed`},
		{name: "bad same_site", json: `{"name":"a","capacity":1,"cookie":{"same_site":"bogus"}}`, wantErr: `cookie: same_site must be lax, strict or none, got "bogus"`},
		{name: "same_site none without secure", json: `{"name":"a","capacity":1,"cookie":{"same_site":"none","secure":false}}`, wantErr: "cookie: same_site none needs secure"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkValidate(t, tc.json, tc.wantErr) })
	}
}

// checkValidate loads a handler's JSON and holds Validate to wantErr: "" for valid,
// else a part of the message that names the problem.
func checkValidate(t *testing.T, config, wantErr string) {
	t.Helper()
	var h Handler
	if err := caddy.StrictUnmarshalJSON([]byte(config), &h); err != nil {
		t.Fatalf("loading JSON: %v", err)
	}
	err := h.Validate()
	switch {
	case wantErr == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case wantErr != "" && err == nil:
		t.Fatalf("no error, want %q", wantErr)
	case wantErr != "" && !strings.Contains(err.Error(), wantErr):
		t.Errorf("error does not name the problem\n got: %v\nwant: …%s…", err, wantErr)
	}
}

// TestCaddyfileSameSiteNoneNeedsSecure: browsers drop a SameSite=None cookie that is not
// Secure, so Validate refuses the pair; the Caddyfile must refuse it too, at parse time
// and with a line in the cookie block, not only later at provision with no line at all.
func TestCaddyfileSameSiteNoneNeedsSecure(t *testing.T) {
	input := "waiting_room {\n name a\n capacity 1\n cookie {\n same_site none\n secure off\n }\n}"
	var h Handler
	err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input))
	if err == nil {
		t.Fatalf("`same_site none` with `secure off` parsed without error (Validate says: %v)", h.Validate())
	}
	if !strings.Contains(err.Error(), "same_site none needs secure") {
		t.Errorf("error does not name the problem: %v", err)
	}
	inBlock := false
	for line := 4; line <= 7; line++ {
		inBlock = inBlock || strings.HasSuffix(err.Error(), ", at Testfile:"+strconv.Itoa(line))
	}
	if !inBlock {
		t.Errorf("error does not point into the cookie block (lines 4-7): %v", err)
	}
}
