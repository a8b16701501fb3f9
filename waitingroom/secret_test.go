package waitingroom

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// A reload that changes the secret without listing the one the room signed with
// makes every cookie given out a stranger's: an admitted visitor comes back as a new
// one, at the back, while the session it had keeps its slot until session_ttl. The
// room cannot tell those sessions from live ones (it can no longer read their
// cookies, and on a fleet mid-rollout the instances not yet reloaded still honour
// them), so it keeps them, and says so at load: a warning that names the room, the
// consequence and the remedy. A reload that lists the old secret, or keeps it, says
// nothing.
func TestChangedSecretWithoutThePreviousWarns(t *testing.T) {
	name := "secret-" + queue.NewVisitorID().String()[:8]
	clk := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	const oldKey, newKey = "the old secret, 32 bytes or longer", "the new secret, 32 bytes or longer"
	load := func(secret string, previous ...string) (*testRoom, *observer.ObservedLogs) {
		core, logs := observer.New(zapcore.WarnLevel)
		return newRoomWith(t, func(h *Handler) {
			h.Name, h.clock, h.Secret, h.PreviousSecrets = name, clk, secret, previous
			h.logger = zap.New(core)
		}), logs
	}
	warned := func(logs *observer.ObservedLogs) bool {
		for _, e := range logs.All() {
			if strings.Contains(e.Message, "secret") && e.ContextMap()["room"] == name {
				return true
			}
		}
		return false
	}
	old, logs := load(oldKey)
	if warned(logs) {
		t.Fatal("the first load warned about a changed secret")
	}
	admitted, _ := old.fill(1)
	if _, logs := load(oldKey); warned(logs) {
		t.Fatal("a reload with the same secret warned")
	}
	if _, logs := load(newKey, oldKey); warned(logs) {
		t.Fatalf("a reload that lists the old secret warned: %v", logs.All())
	}

	changed, logs := load(newKey)
	if !warned(logs) {
		t.Fatalf("a reload with a changed secret and none previous said nothing: %v", logs.All())
	}
	e := logs.All()[0]
	for _, want := range []string{"session_ttl", "previous"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("the warning %q does not say %q", e.Message, want)
		}
	}
	changed.turnedAway(admitted, "an admitted cookie signed with the replaced secret")
	if st := changed.stats(); st.Active != 1 {
		t.Fatalf("after the changed secret, %d active, want the old session still holding its slot", st.Active)
	}
}
