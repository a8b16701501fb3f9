package waitingroom

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
)

// The message to the line: the configured one shows until the admin API replaces it;
// null brings the configured one back, "" shows none; bad input is a 400 that changes
// nothing. Waiters see it in the JSON and on the page, escaped.
func TestMessageToTheLine(t *testing.T) {
	tr := newTestRoomWith(t, 1, func(h *Handler) { h.Message = "We open at 10:00" })
	ctl := tr.h.room
	ctx := context.Background()
	tr.visit("", "application/json") // admitted
	_, cookie := tr.visit("", "application/json")
	if got := tr.queued(cookie).Message; got != "We open at 10:00" {
		t.Fatalf("the configured message: a waiter's JSON says %q", got)
	}

	hostile := `<img src=x onerror=alert(1)>`
	for _, tc := range []struct {
		body, want string
	}{
		{`{"message": "Tickets for Saturday are sold out"}`, "Tickets for Saturday are sold out"},
		{`{"message": ` + string(mustJSON(t, hostile)) + `}`, hostile},
		{`{"message": ""}`, ""},
		{`{"message": null}`, "We open at 10:00"},
		{`{"message": "` + strings.Repeat("é", 500) + `"}`, strings.Repeat("é", 500)},
	} {
		info, err := ctl.Patch(ctx, []byte(tc.body))
		if err != nil {
			t.Fatalf("PATCH %.60s: %v", tc.body, err)
		}
		if info.Message != tc.want {
			t.Fatalf("PATCH %.60s: the room object says %q, want %q", tc.body, info.Message, tc.want)
		}
		if got := tr.queued(cookie).Message; got != tc.want {
			t.Fatalf("PATCH %.60s: a waiter's JSON says %q, want %q", tc.body, got, tc.want)
		}
	}

	if _, err := ctl.Patch(ctx, mustJSON(t, map[string]string{"message": hostile})); err != nil {
		t.Fatal(err)
	}
	w, _ := tr.visit(cookie, "text/html")
	body := w.Body.String()
	if strings.Contains(body, hostile) || !strings.Contains(body, `&lt;img src=x onerror=alert(1)&gt;`) {
		t.Fatalf("the page does not show the message escaped:\n%s", body)
	}

	before, _ := tr.h.store.Overrides(ctx)
	for _, bad := range []string{
		`{"message": "` + strings.Repeat("a", 500+1) + `"}`,
		`{"message": 5}`, `{"message": ["a"]}`, `{"message": {"text": "a"}}`,
		`{"message": "bell\u0007"}`, `{"message": "ok", "capacity": 0}`,
	} {
		_, err := ctl.Patch(ctx, []byte(bad))
		var input room.InputError
		if !errors.As(err, &input) {
			t.Fatalf("PATCH %.60s: got %v, want a 400", bad, err)
		}
		after, _ := tr.h.store.Overrides(ctx)
		if !bytes.Equal(before, after) {
			t.Fatalf("rejected PATCH %.60s changed the overrides: %s -> %s", bad, before, after)
		}
	}
	if got := tr.queued(cookie).Message; got != hostile {
		t.Fatalf("after rejected PATCHes a waiter is told %q", got)
	}
}

func TestCheckMessage(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"", true},
		{"Sold out.\nNext sale on Friday.", true},
		{strings.Repeat("가", 500), true},
		{strings.Repeat("가", 500+1), false},
		{"esc \x1b[31m", false},
		{"\xff", false},
	} {
		if err := settings.CheckMessage(tc.in); (err == nil) != tc.ok {
			t.Errorf("settings.CheckMessage(%.20q) = %v, want ok %v", tc.in, err, tc.ok)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
