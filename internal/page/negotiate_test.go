package page

import (
	"strings"
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testalloc"
)

func TestPrefersJSON(t *testing.T) {
	tests := []struct {
		accept string
		json   bool
	}{
		{"", false},
		{"*/*", false},
		{"application/json", true},
		{"application/json, text/plain, */*", true},
		{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", false},
		{"text/html;q=0.5, application/json", true},
		{"application/json;q=0.1, text/html", false},
		{"application/json;q=bogus", true},
	}
	for _, tt := range tests {
		if got := PrefersJSON(tt.accept); got != tt.json {
			t.Errorf("PrefersJSON(%q) = %v, want %v", tt.accept, got, tt.json)
		}
	}
}

// PrefersJSON never panics, allocates in proportion to the header, and never picks JSON
// for a header that does not ask for it.
func FuzzPrefersJSON(f *testing.F) {
	for _, s := range []string{
		"", "*/*", "application/json", "text/html,application/xhtml+xml,*/*;q=0.8",
		"application/json;q=0.1, text/html", "application/json;q=bogus", "application/json;q=NaN",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, accept string) {
		got := PrefersJSON(accept)
		// Lower-casing a media type (a byte may become three) and the error of an
		// unreadable q are the only allocations: memory in proportion to the header.
		if n, limit := testalloc.Bytes(func() { PrefersJSON(accept) }), 1024+16*len(accept); n > float64(limit) {
			t.Errorf("prefersJSON of a %d-byte header allocated %v bytes (limit %d)", len(accept), n, limit)
		}
		lower := strings.ToLower(accept)
		if got && !strings.Contains(lower, "application/json") && !strings.Contains(lower, "application/*") {
			t.Fatalf("PrefersJSON(%q) = true without asking for JSON", accept)
		}
	})
}
