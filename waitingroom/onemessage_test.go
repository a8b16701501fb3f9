package waitingroom

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// One rule, one message: what the Caddyfile says on the line, what the JSON config's
// validation says and what a PATCH is answered are the same words, the engine's, for
// each rule that all three check.
func TestOneRuleOneMessage(t *testing.T) {
	caddyfileSays := func(block string) string {
		t.Helper()
		var h Handler
		err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser("waiting_room {\n name a\n capacity 1\n" + block + "\n}"))
		if err == nil {
			t.Fatalf("the Caddyfile %q was adapted", block)
		}
		msg, _, _ := strings.Cut(err.Error(), ", at Testfile:")
		return msg
	}
	jsonSays := func(doc string) string {
		t.Helper()
		var h Handler
		if err := json.Unmarshal([]byte(doc), &h); err != nil {
			t.Fatal(err)
		}
		err := h.Validate()
		if err == nil {
			t.Fatalf("the JSON %s was valid", doc)
		}
		return err.Error()
	}

	want := settings.CheckTimings(2*time.Minute, 90*time.Second).Error()
	if got := caddyfileSays(" away_ttl 90s\n queue_ttl 2m"); got != want {
		t.Errorf("the Caddyfile says %q, want %q", got, want)
	}
	if got := jsonSays(`{"name":"a","capacity":1,"queue_ttl":"2m","away_ttl":"90s"}`); got != want {
		t.Errorf("the JSON config's validation says %q, want %q", got, want)
	}
	tr := newTestRoomWith(t, 1, func(h *Handler) { h.QueueTTL = caddy.Duration(2 * time.Minute) })
	if _, err := tr.h.room.Patch(context.Background(), []byte(`{"away_ttl":"90s"}`)); err == nil || err.Error() != want {
		t.Errorf("a PATCH is answered %v, want %q", err, want)
	}

	for _, rule := range []struct{ caddyfile, json string }{
		{" fail maybe", `{"name":"a","capacity":1,"fail":"maybe"}`},
		{" lang tlh", `{"name":"a","capacity":1,"lang":"tlh"}`},
		{" status_code 302", `{"name":"a","capacity":1,"status_code":302}`},
		{" reject_status_code 500", `{"name":"a","capacity":1,"reject_status_code":500}`},
	} {
		if c, j := caddyfileSays(rule.caddyfile), jsonSays(rule.json); c != j {
			t.Errorf("%s: the Caddyfile says %q, the JSON config's validation %q", rule.caddyfile, c, j)
		}
	}
}
