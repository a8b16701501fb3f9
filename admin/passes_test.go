package admin

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// POST passes: the defaults, the bounds, and a 400 naming the problem for bad input.
func TestMintPasses(t *testing.T) {
	fr := newFuzzRoom(t)
	path := "/waiting_room/" + fr.name + "/passes"
	for _, c := range []struct {
		body  string
		count int
		ttl   time.Duration
	}{
		{``, 1, 24 * time.Hour},
		{`{}`, 1, 24 * time.Hour},
		{`{"count": 1000, "ttl": "30d", "uses": 65535}`, 1000, 30 * 24 * time.Hour},
		{`{"count": 3, "ttl": "90m", "uses": 2}`, 3, 90 * time.Minute},
	} {
		before := time.Now()
		code, ct, out := call(t, http.MethodPost, path, []byte(c.body))
		checkAnswer(t, "POST passes "+c.body, code, ct, out, http.StatusOK)
		var res struct {
			Passes    []string  `json:"passes"`
			ExpiresAt time.Time `json:"expires_at"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, p := range res.Passes {
			if len(p) > 48 || seen[p] {
				t.Fatalf("%s: pass %q is too long or given twice", c.body, p)
			}
			seen[p] = true
		}
		if len(res.Passes) != c.count {
			t.Fatalf("%s: %d passes, want %d", c.body, len(res.Passes), c.count)
		}
		if d := res.ExpiresAt.Sub(before.Add(c.ttl)); d < -time.Second || d > time.Minute {
			t.Fatalf("%s: expires at %s, want about %s from now", c.body, res.ExpiresAt, c.ttl)
		}
	}
	for _, c := range []struct{ body, want string }{
		{`{"count": 0}`, "count must be 1 to 1000, got 0"},
		{`{"count": 1001}`, "count must be 1 to 1000, got 1001"},
		{`{"ttl": "31d"}`, "ttl must be at least 1s and at most 720h (30 days)"},
		{`{"ttl": "-1h"}`, "ttl must be at least 1s"},
		{`{"ttl": "soon"}`, `ttl must be a duration such as`},
		{`{"ttl": 60}`, "malformed JSON"},
		{`{"uses": 0}`, "uses must be 1 to 65535, got 0"},
		{`{"uses": 70000}`, "uses must be 1 to 65535, got 70000"},
		{`{"count": "2"}`, "malformed JSON"},
		{`{"counts": 2}`, "malformed JSON"},
		{`{"count": 1}]`, "malformed JSON"},
	} {
		code, ct, out := call(t, http.MethodPost, path, []byte(c.body))
		checkAnswer(t, "POST passes "+c.body, code, ct, out, http.StatusBadRequest)
		if !strings.Contains(string(out), c.want) {
			t.Errorf("%s: %s, want a reason saying %q", c.body, out, c.want)
		}
	}
	if code, _, _ := call(t, http.MethodGet, path, nil); code != http.StatusMethodNotAllowed {
		t.Fatalf("GET passes: %d, want 405", code)
	}
}

// Any body: 200 with the passes asked for, or a 400; never a 500.
func FuzzAdminPasses(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"count": 2}`, `{"ttl": "1h", "uses": 3}`, `{"count": -1}`, `{"ttl": "x"}`, `null`, `[]`} {
		f.Add([]byte(s))
	}
	fr := newFuzzRoom(f)
	path := "/waiting_room/" + fr.name + "/passes"
	f.Fuzz(func(t *testing.T, body []byte) {
		code, ct, out := call(t, http.MethodPost, path, body)
		checkAnswer(t, "POST passes "+string(body), code, ct, out, http.StatusOK, http.StatusBadRequest, http.StatusRequestEntityTooLarge)
		if code != http.StatusOK {
			return
		}
		var res struct{ Passes []string }
		if err := json.Unmarshal(out, &res); err != nil || len(res.Passes) < 1 || len(res.Passes) > 1000 {
			t.Fatalf("passes %q answered %s", body, out)
		}
	})
}
