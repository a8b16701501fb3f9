package token

import (
	"fmt"
	"strings"
)

// MinSecret is the least length of a signing secret, in bytes: a shorter HMAC key is
// found from one cookie by brute force (two bytes took 0.01 s), and then anyone can
// sign admitted cookies and passes. 32 bytes (256 bits) is what HMAC-SHA256 can give.
const MinSecret = 32

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
