package waitingroom

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
)

// maxPatchError bounds what a refused PATCH answers: the reason, the field and a clip
// of the value, never the whole value the caller sent.
const maxPatchError = 600

// A PATCH whose value is huge is refused with an error that names the field and quotes
// a clip of the value, whichever field it is and however it is bad.
func TestPatchErrorsClipTheValue(t *testing.T) {
	tr := newTestRoom(t, 1)
	ctl := tr.h.room
	huge := strings.Repeat("x", 64<<10)
	zeros := strings.Repeat("0", 64<<10)
	for _, tc := range []struct {
		name, body, field string
	}{
		{"capacity not a number", `{"capacity":"` + huge + `"}`, "capacity"},
		{"mode unknown", `{"mode":"` + huge + `"}`, "mode"},
		{"mode not a string", `{"mode":[` + strings.Repeat("1,", 32<<10) + `1]}`, "mode"},
		{"rate window", `{"rate":{"count":1,"per":"` + huge + `"}}`, "rate"},
		{"proof_of_work not a number", `{"proof_of_work":"` + huge + `"}`, "proof_of_work"},
		{"session_ttl unparsable", `{"session_ttl":"` + huge + `"}`, "session_ttl"},
		// Parses (leading zeros) to -1s: refused for its sign, and quoted.
		{"queue_ttl negative", `{"queue_ttl":"-` + zeros + `1s"}`, "queue_ttl"},
		{"session_max zero", `{"session_max":"` + zeros + `s"}`, "session_max"},
		{"away_ttl too long", `{"away_ttl":"` + zeros + `9999h"}`, "away_ttl"},
		{"message not a string", `{"message":["` + huge + `"]}`, "message"},
		{"unknown field", `{"` + huge + `":1}`, "unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ctl.Patch(context.Background(), []byte(tc.body))
			var input room.InputError // the admin API answers it 400
			if !errors.As(err, &input) {
				t.Fatalf("PATCH answered %v, want the caller's error", err)
			}
			msg := err.Error()
			if len(msg) > maxPatchError {
				t.Errorf("the error is %d bytes, want at most %d: %.200s…", len(msg), maxPatchError, msg)
			}
			if !strings.Contains(msg, tc.field) {
				t.Errorf("the error does not name %s: %.300s", tc.field, msg)
			}
		})
	}
}

// A PATCH with several bad fields is refused naming the same one every time (the first
// in alphabetical order), not whichever a map's iteration met first.
func TestPatchErrorIsTheSameEveryTime(t *testing.T) {
	tr := newTestRoom(t, 1)
	ctl := tr.h.room
	body := []byte(`{"session_ttl":"soon","mode":"FIFO","rate":7,"queue_ttl":"-1s","proof_of_work":99,
		"capacity":0,"message":5,"away_ttl":"x","session_max":"y","colour":"red"}`)
	first := ""
	for i := range 200 {
		_, err := ctl.Patch(context.Background(), body)
		if err == nil {
			t.Fatal("a PATCH of bad fields was accepted")
		}
		if i == 0 {
			first = err.Error()
			continue
		}
		if err.Error() != first {
			t.Fatalf("run %d answered %q, run 0 %q", i, err, first)
		}
	}
	if !strings.Contains(first, "away_ttl") {
		t.Errorf("the error names another field than away_ttl, the first in order: %s", first)
	}
}
