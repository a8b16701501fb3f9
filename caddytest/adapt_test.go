package caddytest

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
)

// These tests only adapt Caddyfiles to JSON: no server is started, so they do not
// touch the harness's admin port.

var update = flag.Bool("update", false, "rewrite testdata/adapt/*.json from the adapter's current output")

// adapt turns the Caddyfile at path into indented JSON, failing the test on an error
// or on any warning (an unformatted file, an unknown option...).
func adapt(t *testing.T, path string) []byte {
	t.Helper()
	// The Caddyfiles take their secret from the environment, and adapting checks it
	// (docs/caddyfile.md): here as where Caddy runs, it is set.
	t.Setenv("WAITING_ROOM_SECRET", "a secret of 32 bytes or more, from the environment")
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	adapter := caddyconfig.GetAdapter("caddyfile")
	if adapter == nil {
		t.Fatal("the caddyfile adapter is not registered")
	}
	// The base name only: it lands in file_server's "hide" list, and the golden files
	// should not depend on where the test runs from.
	out, warnings, err := adapter.Adapt(body, map[string]any{"filename": filepath.Base(path)})
	if err != nil {
		t.Fatalf("adapting %s: %v", path, err)
	}
	for _, w := range warnings {
		t.Errorf("adapting %s: warning: %s", path, w)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, out, "", "\t"); err != nil {
		t.Fatal(err)
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}

func TestAdaptGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "adapt", "*.caddyfile"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden Caddyfiles in testdata/adapt")
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".caddyfile")
		t.Run(name, func(t *testing.T) {
			got := adapt(t, file)
			golden := strings.TrimSuffix(file, ".caddyfile") + ".json"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run `go test -run TestAdaptGolden -update` in caddytest/ to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s adapts to JSON that differs from %s (review, then -update)\n got:\n%s\nwant:\n%s",
					file, golden, got, want)
			}
		})
	}
}

// TestAdaptExamples adapts the Caddyfiles the README points people at: they must work
// as written, without a single warning.
func TestAdaptExamples(t *testing.T) {
	files := []string{filepath.Join("..", "Caddyfile.example")}
	examples, err := filepath.Glob(filepath.Join("..", "examples", "*.caddyfile"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, examples...)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			adapt(t, file)
		})
	}
}

// TestAdaptOrder holds the directive's place in the handler chain, independently of the
// golden files (which `-update` rewrites): after `header`, so security headers reach the
// waiting page, and before everything that serves or guards content, so all of it is
// behind the room. The Caddyfiles name no `order`: RegisterDirectiveOrder does the work.
func TestAdaptOrder(t *testing.T) {
	for _, tc := range []struct {
		file   string
		after  []string // handlers that must run before the room
		before []string // handlers that must run after it
	}{
		{file: "minimal", before: []string{"reverse_proxy"}},
		{file: "matcher", before: []string{"reverse_proxy"}},
		{file: "full", before: []string{"reverse_proxy"}},
		{
			file:   "together",
			after:  []string{"headers"},
			before: []string{"authentication", "static_response", "reverse_proxy", "file_server"},
		},
		{file: "two_rooms", before: []string{"reverse_proxy"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			chain := handlerChain(t, adapt(t, filepath.Join("testdata", "adapt", tc.file+".caddyfile")))
			first, last := slices.Index(chain, "waiting_room"), lastIndex(chain, "waiting_room")
			if first < 0 {
				t.Fatalf("no waiting_room in the adapted chain %v", chain)
			}
			for _, h := range tc.after {
				if i := lastIndex(chain, h); i < 0 || i > first {
					t.Errorf("%s must run before waiting_room; chain: %v", h, chain)
				}
			}
			for _, h := range tc.before {
				if i := slices.Index(chain, h); i < 0 || i < last {
					t.Errorf("%s must run after waiting_room; chain: %v", h, chain)
				}
			}
		})
	}
}

// TestAdaptTwoRooms checks that two rooms in one site stay two rooms, each behind its
// own matcher, so a visitor to /api/ never queues for tickets.
func TestAdaptTwoRooms(t *testing.T) {
	cfg := adapt(t, filepath.Join("testdata", "adapt", "two_rooms.caddyfile"))
	rooms := map[string]string{} // room name -> its route's matcher, as JSON
	walkHandlers(t, cfg, func(h map[string]any, match any) {
		if h["handler"] != "waiting_room" {
			return
		}
		name, _ := h["name"].(string)
		if _, dup := rooms[name]; dup {
			t.Errorf("room %q appears twice", name)
		}
		m, _ := json.Marshal(match)
		rooms[name] = string(m)
	})
	want := map[string]string{
		"api":     `[{"path":["/api/*"]}]`,
		"tickets": `[{"path":["/tickets/*"]}]`,
	}
	if len(rooms) != len(want) {
		t.Fatalf("rooms %v, want %v", rooms, want)
	}
	for name, m := range want {
		if rooms[name] != m {
			t.Errorf("room %q matches %s, want %s", name, rooms[name], m)
		}
	}
}

// handlerChain lists the config's handlers in the order a request meets them,
// subroutes flattened in place.
func handlerChain(t *testing.T, cfg []byte) []string {
	t.Helper()
	var chain []string
	walkHandlers(t, cfg, func(h map[string]any, _ any) {
		name, _ := h["handler"].(string)
		chain = append(chain, name)
	})
	return chain
}

// walkHandlers calls fn for every HTTP handler in cfg, depth first in route order,
// with the matcher sets of the route that holds it.
func walkHandlers(t *testing.T, cfg []byte, fn func(handler map[string]any, match any)) {
	t.Helper()
	var c struct {
		Apps struct {
			HTTP struct {
				Servers map[string]struct {
					Routes []any `json:"routes"`
				} `json:"servers"`
			} `json:"http"`
		} `json:"apps"`
	}
	if err := json.Unmarshal(cfg, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Apps.HTTP.Servers) != 1 {
		t.Fatalf("want one server, got %d", len(c.Apps.HTTP.Servers))
	}
	var walk func(routes []any)
	walk = func(routes []any) {
		for _, r := range routes {
			route, _ := r.(map[string]any)
			handlers, _ := route["handle"].([]any)
			for _, h := range handlers {
				handler, _ := h.(map[string]any)
				fn(handler, route["match"])
				if sub, ok := handler["routes"].([]any); ok && handler["handler"] == "subroute" {
					walk(sub)
				}
			}
		}
	}
	for _, srv := range c.Apps.HTTP.Servers {
		walk(srv.Routes)
	}
}

func lastIndex(s []string, v string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == v {
			return i
		}
	}
	return -1
}
