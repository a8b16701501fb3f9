package page

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testalloc"
)

// Beyond FuzzNegotiate (always a supported language): with any set of languages, a
// header that names a supported language first gets that language whatever follows,
// and no header, however long, costs more memory than the ranges read of its first
// maxAcceptLanguage bytes do.
func FuzzNegotiateFirstNamedWins(f *testing.F) {
	for _, s := range []string{
		"", "*", "ko;q=0", "en;q=0, *;q=0", "de-AT, *;q=0.5", "zh-Hant-TW;q=1.0", ";q=", "*;q=NaN",
		"ko;q=0.2, *;q=0.5", "x;q=1e308", strings.Repeat("ko;q=0.1,", 200),
	} {
		f.Add(s)
	}
	langs := []string{"de", "en", "ko", "zh-hant"}
	lm := newMatcher(langs)
	f.Fuzz(func(t *testing.T, header string) {
		got := lm.negotiate(header)
		if !slices.Contains(langs, got) {
			t.Fatalf("negotiate(%q) = %q, not a supported language", header, got)
		}
		for _, first := range langs {
			if got := lm.negotiate(first + "," + header); got != first {
				t.Fatalf("negotiate(%q) = %q; the first range names %q", first+","+header, got, first)
			}
		}
		// Work is bounded by what is read of the header, its first maxAcceptLanguage
		// bytes and at most maxLanguageRanges ranges of them: x/text allocates a few
		// hundred bytes for each range it parses, and never more for a longer header.
		head := header[:min(len(header), maxAcceptLanguage)]
		ranges := min(strings.Count(head, ",")+1, maxLanguageRanges)
		if n, limit := testalloc.Bytes(func() { lm.negotiate(header) }), 1024+512*ranges; n > float64(limit) {
			t.Errorf("negotiate of a %d-byte header (%d ranges read) allocated %v bytes (limit %d)", len(header), ranges, n, limit)
		}
	})
}

// Whatever an operator's template does, its Page writes what executing it writes:
// the walk may refuse a template it could have spliced, never splice one wrongly. A
// gzip page, when there is one, inflates to the same bytes.
func FuzzPageIsTheTemplate(f *testing.F) {
	for _, s := range []string{
		`<p>{{.Position}} {{number .T .Waiting}} {{eta .T .ETASeconds}}</p><i nonce="{{.Nonce}}">{{percent .Progress}}</i>`,
		`{{if lt .Position 10}}soon{{else}}{{.Position}}{{end}}`,
		`<script>var s = {{clientState .}}, p = {{.Position}}, n = {{.Nonce}}, w = {{number .T .Waiting}};</script>`,
		`{{$p := .Position}}{{range $k, $v := .T}}{{$p}}{{end}}{{with $}}{{.Active}}{{end}}`,
		`{{define "x"}}{{.}}{{end}}{{template "x" .Position}}<a href="/{{template "x" .Waiting}}">`,
		`<title>{{number .T .Position}}</title><textarea>{{eta .T .StartsInSeconds}}</textarea><!-- {{.Position}} -->`,
		`<progress value={{.Progress}}></progress><p style="width: {{.Progress}}%">`,
		`{{.Position | printf "%d"}}{{len .Nonce}}{{index .T "heading"}}{{and .Position .Waiting}}`,
	} {
		f.Add(s, 1234, 42)
	}
	f.Fuzz(func(t *testing.T, text string, position, eta int) {
		p, err := NewPage("fuzz.html", text)
		if err != nil {
			return
		}
		for _, lang := range []string{"en", "fr"} {
			d := Data{Room: "shop", Lang: lang, State: "queued", Mode: "fifo", Position: position, Waiting: position * 3,
				Active: 2, Capacity: 2, ETAKnown: true, ETASeconds: eta, Progress: 50, RefreshSeconds: 5, Nonce: "abc123XYZ"}
			got, gotErr := p.Render(nil, &d)
			gz, zipped := p.RenderGzip(nil, &d)
			d.T = Messages(lang)
			var want bytes.Buffer
			wantErr := p.Template().Execute(&want, d)
			if (gotErr == nil) != (wantErr == nil) || gotErr == nil && !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("%q (%s, position %d, eta %d):\nPage     %q, %v\ntemplate %q, %v", text, lang, position, eta, got, gotErr, want.String(), wantErr)
			}
			if zipped && !bytes.Equal(inflate(t, gz), want.Bytes()) {
				t.Fatalf("%q (%s, position %d, eta %d): the gzip page inflates to %q", text, lang, position, eta, inflate(t, gz))
			}
		}
	})
}

// Whatever the numbers and the nonce, the embedded page's gzip twin inflates to the
// page, or there is none and the page goes out as it is.
func FuzzGzipPageIsThePage(f *testing.F) {
	f.Add(uint8(0), 1234, 56789, 3, 240, 40, 0, "n0Nc3n0Nc3n0Nc3n0Nc3ab")
	f.Add(uint8(5), 1, 0, 0, 59, 100, 61, "")
	f.Add(uint8(13), 123456789012, 1<<40, 7, 1<<40, 99, 1<<33, "x")
	f.Add(uint8(2), -1, 5, 5, -300, -2, 5, "a+b")
	f.Add(uint8(30), 9, 99, 999, 9999, 99999, 999999, "日本")
	p := EmbeddedPage()
	langs, states := Languages(), []string{"queued", "prequeue", "rejected", "unavailable"}
	f.Fuzz(func(t *testing.T, kind uint8, position, waiting, active, eta, progress, startsIn int, nonce string) {
		d := Data{Room: "shop", Lang: langs[int(kind)%len(langs)], State: states[int(kind/8)%len(states)], Mode: "fifo",
			Position: position, Waiting: waiting, Active: active, Capacity: 10, ETAKnown: kind&1 != 0, ETASeconds: eta,
			Progress: progress, StartsInSeconds: startsIn, RefreshSeconds: 5, Nonce: nonce}
		want, err := p.Render(nil, &d)
		if err != nil {
			t.Fatal(err)
		}
		gz, ok := p.RenderGzip(nil, &d)
		if !ok {
			if p.frameFor(&d) != nil && len(nonce) <= 0xffff {
				t.Fatalf("no gzip page for a waiter the frame renders: %+v", d)
			}
			return
		}
		if got := inflate(t, gz); !bytes.Equal(got, want) {
			t.Fatalf("%+v: the gzip page inflates to another page at byte %d:\n%s", d, firstDifference(string(got), string(want)), diffContext(string(got), string(want)))
		}
	})
}
