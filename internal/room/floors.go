package room

import (
	"fmt"
	"strings"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// The least each setting may be. Below these a setting parses, and the room runs, but
// cannot do what the setting says. The Caddyfile, Validate and the admin API's PATCH
// all refuse them with atLeast's message.
const (
	// MinQueueTTL outlasts two polls of a page without a socket (every 2 s at the
	// fastest, up to 2.2 s with its jitter: refreshSeconds), so one late poll does not
	// send a waiter away; a socket's heartbeat is queue_ttl/3. Below a poll, nobody
	// who polls is ever present, and with a free slot nobody is admitted.
	MinQueueTTL = 5 * time.Second

	// MinSessionTTL outlasts two of an instance's store confirmations of an admitted
	// visitor (one per queue.TouchEvery at most): below it, a visitor who keeps
	// clicking loses the slot between two confirmations.
	MinSessionTTL = 2 * queue.TouchEvery

	// MinSessionMax is a session that can hold a page or two; it is bounded by the
	// same confirmations as session_ttl, so other instances learn of its end in time.
	MinSessionMax = MinSessionTTL

	// MinArriveTTL is the least time an admitted waiter has to arrive: the admission
	// reaches a connected page within a second, and the page's navigation follows.
	// CheckArrive also holds it above two polls of a page without a socket.
	MinArriveTTL = 5 * time.Second

	// MinWindow bounds a rate's window and the per-address join window: admissions
	// are decided every stepEvery, and a window much below a second cannot be kept as
	// written (a rate of 1 per 100ms admits at the step's pace, not ten a second).
	MinWindow = time.Second

	// MinSecret is the least length of a signing secret, in bytes: a shorter HMAC key
	// is found from one cookie by brute force (two bytes took 0.01 s), and then anyone
	// can sign admitted cookies and passes. 32 bytes (256 bits) is what HMAC-SHA256 can
	// give.
	MinSecret = 32
)

// AtLeast refuses d below floor, saying both.
func AtLeast(name string, d, floor time.Duration) error {
	if d < floor {
		return fmt.Errorf("%s must be at least %v, got %v", name, floor, d)
	}
	return nil
}

// CheckSecret refuses a secret (after its placeholders are expanded) that is empty
// or shorter than MinSecret. what is "secret" or "previous secret"; configured is the
// text as written, named in the error only when it is a placeholder (a literal secret
// is never echoed).
func CheckSecret(what, configured, expanded string) error {
	if strings.Contains(configured, "{") {
		what += " " + configured
	}
	switch {
	case expanded == "":
		if env, ok := strings.CutPrefix(configured, "{env."); ok && strings.HasSuffix(env, "}") && !strings.Contains(env, "{") {
			return fmt.Errorf("%s is empty: set %s in the environment Caddy runs in", what, strings.TrimSuffix(env, "}"))
		}
		return fmt.Errorf("%s is empty after expanding placeholders", what)
	case len(expanded) < MinSecret:
		return fmt.Errorf("%s must be at least %d bytes, got %d: a short key is found from one cookie by brute force", what, MinSecret, len(expanded))
	}
	return nil
}
