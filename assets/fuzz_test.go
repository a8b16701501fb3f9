package assets

import (
	"slices"
	"strings"
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testalloc"
)

// Beyond FuzzNegotiate (always a supported language): with any set of languages, a
// header that names a supported language first gets that language whatever follows,
// and no header, however long, costs more memory than its first maxAcceptLanguage
// bytes do.
func FuzzNegotiateFirstNamedWins(f *testing.F) {
	for _, s := range []string{
		"", "*", "ko;q=0", "en;q=0, *;q=0", "de-AT, *;q=0.5", "zh-Hant-TW;q=1.0", ";q=", "*;q=NaN",
		"ko;q=0.2, *;q=0.5", "x;q=1e308", strings.Repeat("ko;q=0.1,", 200),
	} {
		f.Add(s)
	}
	langs := []string{"de", "en", "ko", "zh-hant"}
	f.Fuzz(func(t *testing.T, header string) {
		got := negotiate(header, langs)
		if !slices.Contains(langs, got) {
			t.Fatalf("negotiate(%q) = %q, not a supported language", header, got)
		}
		for _, first := range langs {
			if got := negotiate(first+","+header, langs); got != first {
				t.Fatalf("negotiate(%q) = %q; the first range names %q", first+","+header, got, first)
			}
		}
		// Work is bounded by the header's first maxAcceptLanguage bytes: memory in
		// proportion to those (lower-casing may turn a byte into three), never more for
		// a longer header.
		head := min(len(header), maxAcceptLanguage)
		if n, limit := testalloc.Bytes(func() { negotiate(header, langs) }), 1024+16*head; n > float64(limit) {
			t.Errorf("negotiate of a %d-byte header allocated %v bytes (limit %d)", len(header), n, limit)
		}
	})
}
