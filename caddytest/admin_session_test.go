package caddytest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// PATCH takes the session settings: each shows in the room object, bad values are a
// 400 with the reason and change nothing, null restores.
func TestAdminPatchSessionSettings(t *testing.T) {
	room := uniqueRoom(t)
	startLive(t, room, "capacity 1\n\t\tsession_ttl 5m\n\t\tqueue_ttl 1m")
	settings := func() (map[string]any, map[string]any) {
		t.Helper()
		code, body := admin(t, http.MethodGet, "/waiting_room/"+room, "")
		var obj map[string]any
		if code != http.StatusOK || json.Unmarshal([]byte(body), &obj) != nil {
			t.Fatalf("GET room: %d %s", code, body)
		}
		o, _ := obj["overrides"].(map[string]any)
		return obj, o
	}
	obj, _ := settings()
	if obj["session_ttl"] != "5m0s" || obj["queue_ttl"] != "1m0s" || obj["away_ttl"] != "10m0s" || obj["session_max"] != "" {
		t.Fatalf("room object before any PATCH: %v", obj)
	}
	code, body := admin(t, http.MethodPatch, "/waiting_room/"+room,
		`{"session_ttl":"2m","queue_ttl":"30s","away_ttl":"0","session_max":"20m"}`)
	if code != http.StatusOK {
		t.Fatalf("PATCH: %d %s", code, body)
	}
	obj, o := settings()
	if obj["session_ttl"] != "2m0s" || obj["queue_ttl"] != "30s" || obj["away_ttl"] != "0s" || obj["session_max"] != "20m0s" ||
		o["session_max"] != "20m0s" {
		t.Fatalf("room object after PATCH: %v", obj)
	}
	before := body
	for _, bad := range []struct{ body, reason string }{
		{`{"session_max":"0"}`, "session_max must be greater than 0"},
		{`{"session_max":-5}`, "session_max must be a duration string"},
		{`{"session_ttl":"forever"}`, "session_ttl: bad duration"},
		{`{"queue_ttl":"-1s"}`, "queue_ttl must be greater than 0"},
		{`{"away_ttl":"1000d"}`, "away_ttl must be at most 720h0m0s"},
		{`{"away_ttl":"10s"}`, "away_ttl (10s) must be 0 or at least queue_ttl (30s)"},
		{`{"session_max":"5m","capacity":0}`, "capacity must be greater than 0"},
	} {
		code, body := admin(t, http.MethodPatch, "/waiting_room/"+room, bad.body)
		if code != http.StatusBadRequest || !strings.Contains(body, `"error"`) || !strings.Contains(body, bad.reason) {
			t.Errorf("PATCH %s: %d %s, want 400 mentioning %q", bad.body, code, body, bad.reason)
		}
	}
	if _, after := admin(t, http.MethodGet, "/waiting_room/"+room, ""); !sameSettings(before, after) {
		t.Fatalf("rejected PATCHes changed the room:\nbefore %s\nafter  %s", before, after)
	}
	code, body = admin(t, http.MethodPatch, "/waiting_room/"+room,
		`{"session_ttl":null,"queue_ttl":null,"away_ttl":null,"session_max":null}`)
	if code != http.StatusOK {
		t.Fatalf("PATCH null: %d %s", code, body)
	}
	if obj, o := settings(); obj["session_ttl"] != "5m0s" || obj["session_max"] != "" || len(o) != 0 {
		t.Fatalf("after restoring: %v", obj)
	}
}

// sameSettings compares two room objects' settings and overrides.
func sameSettings(a, b string) bool {
	pick := func(s string) string {
		var obj map[string]any
		_ = json.Unmarshal([]byte(s), &obj)
		out, _ := json.Marshal([]any{obj["session_ttl"], obj["queue_ttl"], obj["away_ttl"], obj["session_max"], obj["capacity"], obj["overrides"]})
		return string(out)
	}
	return pick(a) == pick(b)
}
