package page

import (
	"bytes"
	"fmt"
	"html/template"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// hostileRooms are room names an operator might write, or a careless one might: markup,
// every character html/template escapes, the probe's own private-use marks, digits
// shaped like its sentinels.
var hostileRooms = []string{
	"",
	`</script><script>alert(1)</script> & "q" 'x' +1`,
	"\ue000\ue001\ue002 1023456789123456789 0123456789 {n}",
}

// numberSets are volatile fields far apart: zeros, a three-digit edge, grouped
// thousands, numbers beyond any real queue, and every form of a wait.
var numberSets = []Data{
	{Position: 0, Waiting: 0, Active: 0, ETASeconds: 0, Progress: 0, StartsInSeconds: 0},
	{Position: 1, Waiting: 1, Active: 1, ETASeconds: 59, Progress: 100, StartsInSeconds: 61},
	{Position: 999, Waiting: 1000, Active: 7, ETASeconds: 11 * 60, Progress: 250, StartsInSeconds: 89 * 60},
	{Position: 1234567, Waiting: 98765432, Active: 100000, ETASeconds: 5 * 3600, Progress: 37, StartsInSeconds: 30},
	{Position: 123456789012, Waiting: 123456789012345, Active: 1 << 40, ETASeconds: 1 << 40, Progress: 99, StartsInSeconds: 1 << 33},
}

// direct is what html/template writes for d: what every render of a Page must equal.
func direct(t *testing.T, tmpl *template.Template, d Data) string {
	t.Helper()
	d.T = Messages(d.Lang)
	var b bytes.Buffer
	if err := tmpl.Execute(&b, d); err != nil {
		t.Fatalf("executing: %v", err)
	}
	return b.String()
}

func renderPage(t *testing.T, p *Page, d Data) string {
	t.Helper()
	out, err := p.Render(nil, &d)
	if err != nil {
		t.Fatalf("rendering: %v", err)
	}
	return string(out)
}

// eachPage calls fn with waiters of every language, state, mode, lottery, ETA and
// room, with numbers from numberSets. A thin run takes one room and one mode per
// state, for templates whose words do not change with them.
func eachPage(thin bool, fn func(Data)) {
	rng := rand.New(rand.NewPCG(1, 2))
	rooms, modes := hostileRooms, []string{"fifo", "random"}
	if thin {
		rooms = rooms[1:2]
	}
	for _, lang := range Languages() {
		for si, state := range []string{"queued", "prequeue", "rejected", "unavailable"} {
			for mi, mode := range modes {
				if thin && mi != si%2 {
					continue
				}
				for _, room := range rooms {
					for i := range 4 {
						d := numberSets[rng.IntN(len(numberSets))]
						d.Room, d.Lang, d.State, d.Mode = room, lang, state, mode
						d.Lottery, d.ETAKnown = i&1 != 0, i&2 != 0
						d.Capacity, d.RefreshSeconds = 1+rng.IntN(5000), rng.IntN(12)
						d.AwayTTLSeconds = []int{0, 1, 2, 119, 600, 7200, 1 << 40}[rng.IntN(7)]
						d.Returned = rng.IntN(2) == 0
						d.Missed = d.Returned && rng.IntN(2) == 0
						d.Reason = []string{"", "session_max"}[rng.IntN(2)]
						d.Nonce = randomString(nonceRunes, 22)
						fn(d)
					}
				}
			}
		}
	}
}

// The embedded page is spliced for every waiter, and the splice writes exactly what
// the template does, as it is and gzipped.
func TestEmbeddedPageIsSplicedExactly(t *testing.T) {
	p := EmbeddedPage()
	if err := p.Unspliced(); err != nil {
		t.Fatalf("the embedded page is not spliced: %v", err)
	}
	n := 0
	eachPage(false, func(d Data) {
		if p.frameFor(&d) == nil {
			t.Fatalf("no frame for %s/%s/%s room %q", d.Lang, d.State, d.Mode, d.Room)
		}
		want := direct(t, DefaultTemplate(), d)
		if got := renderPage(t, p, d); got != want {
			t.Fatalf("%s/%s/%s room %q position %d: the splice differs from the template at byte %d:\n%s",
				d.Lang, d.State, d.Mode, d.Room, d.Position, firstDifference(got, want), diffContext(got, want))
		}
		gz, ok := p.RenderGzip(nil, &d)
		if !ok {
			t.Fatalf("no gzip page for %s/%s/%s room %q", d.Lang, d.State, d.Mode, d.Room)
		}
		if got := string(inflate(t, gz)); got != want {
			t.Fatalf("%s/%s/%s room %q position %d: the gzip page inflates to another page at byte %d:\n%s",
				d.Lang, d.State, d.Mode, d.Room, d.Position, firstDifference(got, want), diffContext(got, want))
		}
		n++
	})
	t.Logf("%d pages compared", n)
}

func firstDifference(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func diffContext(got, want string) string {
	i := firstDifference(got, want)
	lo := max(i-60, 0)
	return fmt.Sprintf("got  %q\nwant %q", got[lo:min(i+60, len(got))], want[lo:min(i+60, len(want))])
}

// An operator's template is spliced when all it does with the volatile fields is
// print them; one that decides on them, or prints them where a splice cannot follow
// the escaping, is executed for every waiter (and never compressed). Both write what
// the template writes.
func TestOperatorPages(t *testing.T) {
	tests := []struct {
		name, text string
		spliced    bool
	}{
		{"prints", `<html lang="{{.Lang}}"><style nonce="{{.Nonce}}">p{}</style>
<p title="{{number .T .Position}} {{eta .T .ETASeconds}}">{{.T.heading}}: {{.Position}} of {{number .T .Waiting}}, {{.Active}}/{{.Capacity}}</p>
{{if .ETAKnown}}<p>{{eta .T .ETASeconds}}</p>{{end}}<progress value="{{percent .Progress}}"></progress>
<script nonce="{{.Nonce}}">var p = {{.Position}}, w = {{number .T .Waiting}}, e = {{eta .T .StartsInSeconds}}, n = {{.Nonce}};</script>
<title>{{number .T .Position}} · {{.Room}}</title><pre>{{clientState .}}</pre>`, true},
		{"variables, with, pipes and templates", `{{define "place"}}<b>{{.Position}}</b> {{number .T .Position}}{{end}}
{{$p := .Position}}{{$t := .T}}{{$p}} {{number $t $p}} {{.Waiting | number .T}} {{with $}}{{.Active}}{{end}}
{{with .Room}}<h1>{{.}} {{$.Position}}</h1>{{end}}{{range $k, $v := .T}}{{if eq $k "heading"}}{{$v}} {{$.Waiting}}{{end}}{{end}}
{{template "place" .}}{{block "more" .}}{{percent .Progress}}{{end}}`, true},
		{"numbers in unquoted attributes", `<progress value={{percent .Progress}} max=100 data-at={{.Position}} title={{number .T .Waiting}}></progress>`, true},
		{"nonce in an unquoted attribute", `<style nonce={{.Nonce}}>p{}</style>`, false},
		{"decides on the position", `{{if lt .Position 10}}<p>Almost there!</p>{{else}}<p>{{.Position}}</p>{{end}}`, false},
		{"formats the position itself", `<p>{{printf "%05d" .Position}}</p>`, false},
		{"position in a URL", `<a href="/queue?at={{.Position}}">me</a>`, false},
		{"nonce in a style", `<p style="--n: {{.Nonce}}">x</p>`, false},
		{"with on a number", `{{with .Waiting}}<p>{{.}}</p>{{end}}`, false},
		{"assigned in a loop", `{{$x := 0}}{{range $k, $v := .T}}{{$x}}{{$x = $.Position}}{{end}}`, false},
		{"the whole page data", `<pre>{{.}}</pre>`, false},
		{"number of a number", `{{number .T (percent .Progress)}}`, false},
		{"template outside text", `{{define "n"}}{{.}}{{end}}<a title="{{template "n" .Position}}">x</a>`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPage("mine.html", tt.text)
			if err != nil {
				t.Fatal(err)
			}
			if spliced := p.Unspliced() == nil; spliced != tt.spliced {
				t.Fatalf("spliced = %v (%v), want %v", spliced, p.Unspliced(), tt.spliced)
			}
			t.Logf("unspliced: %v", p.Unspliced())
			eachPage(true, func(d Data) {
				if tt.spliced && p.frameFor(&d) == nil {
					t.Fatalf("no frame for %s/%s room %q", d.Lang, d.State, d.Room)
				}
				want := direct(t, p.Template(), d)
				if got := renderPage(t, p, d); got != want {
					t.Fatalf("%s/%s room %q position %d: the page differs from the template at byte %d:\n%s",
						d.Lang, d.State, d.Room, d.Position, firstDifference(got, want), diffContext(got, want))
				}
				// Only a spliced page is sent gzipped, and it inflates to the same page.
				gz, ok := p.RenderGzip(nil, &d)
				if ok != tt.spliced || ok && string(inflate(t, gz)) != want {
					t.Fatalf("%s/%s room %q: gzip page %v (spliced %v), or it inflates to another page", d.Lang, d.State, d.Room, ok, tt.spliced)
				}
			})
		})
	}
}

// A template error is the caller's to handle (the handler falls back to the embedded
// page), and it is the same error for every waiter of a kind, spliced or not.
func TestPageErrorsAreReturned(t *testing.T) {
	p, err := NewPage("fragile.html", `{{if eq .Lang "de"}}{{index .T.nope 5}}{{end}}<p>{{.Position}}</p>`)
	if err != nil {
		t.Fatal(err)
	}
	d := Data{Lang: "de", State: "queued", Position: 3}
	for range 2 {
		if out, err := p.Render([]byte("kept"), &d); err == nil || string(out) != "kept" {
			t.Fatalf("Render = %q, %v; want the error and dst as it came", out, err)
		}
	}
	d.Lang = "en"
	if got := renderPage(t, p, d); got != "<p>3</p>" {
		t.Fatalf("en page = %q", got)
	}
}

// Only languages Negotiate can return are cache keys, and the cache stays bounded
// however often the operator changes the capacity.
func TestPageCacheIsBounded(t *testing.T) {
	p := EmbeddedPage()
	frames := func() int {
		if m := p.frames.Load(); m != nil {
			return len(*m)
		}
		return 0
	}
	d := Data{Room: "shop", Lang: "en", State: "queued", Mode: "fifo", Capacity: 10, RefreshSeconds: 5, Nonce: "abc"}
	want := renderPage(t, p, d)
	for _, lang := range []string{"en-US", "EN", "xx", strings.Repeat("a", 1000), "\x00"} {
		d := d
		d.Lang = lang
		if got := renderPage(t, p, d); got != direct(t, DefaultTemplate(), d) {
			t.Fatalf("lang %q: the page differs from the template", lang)
		}
	}
	if n := frames(); n != 1 {
		t.Fatalf("%d frames after one supported and five unsupported languages, want 1", n)
	}
	for c := range maxFrames + 5 {
		d.Capacity = c
		renderPage(t, p, d)
		if n := frames(); n > maxFrames {
			t.Fatalf("%d frames, more than %d", n, maxFrames)
		}
	}
	d.Capacity = 10
	if got := renderPage(t, p, d); got != want {
		t.Fatal("the page changed after the cache started over")
	}
}

// A waiter's own T, a negative number or a nonce of other runes than the probe checked
// are executed, not spliced.
func TestPageRendersWhatAFrameCannot(t *testing.T) {
	p := EmbeddedPage()
	base := Data{Room: "shop", Lang: "en", State: "queued", Mode: "fifo", Position: 5, Waiting: 9, Capacity: 2, RefreshSeconds: 5, ETAKnown: true, ETASeconds: 300, Nonce: "abc"}
	for name, edit := range map[string]func(*Data){
		"own T": func(d *Data) {
			d.T = Messages("en")
			d.T["heading"], d.T["thousands_separator"] = "Mine", "'"
		},
		"negative":        func(d *Data) { d.Position = -4 },
		"negative ETA":    func(d *Data) { d.ETASeconds = -100 },
		"escaped nonce":   func(d *Data) { d.Nonce = `a+b/c="<>&` },
		"non-ASCII nonce": func(d *Data) { d.Nonce = "ключ" },
	} {
		t.Run(name, func(t *testing.T) {
			d := base
			edit(&d)
			if p.frameFor(&d) != nil {
				t.Fatal("a frame was offered")
			}
			want := direct(t, DefaultTemplate(), d)
			if d.T != nil { // direct would have replaced it
				var b bytes.Buffer
				_ = DefaultTemplate().Execute(&b, d)
				want = b.String()
			}
			if got := renderPage(t, p, d); got != want {
				t.Fatalf("the page differs from the template at byte %d:\n%s", firstDifference(got, want), diffContext(got, want))
			}
		})
	}
}

// Rendering a page from its frame allocates nothing, plain or gzipped: the waiter's
// numbers are formatted straight into the caller's buffer, and a gzip page's
// compressed bytes are copied and its checksum kept as it goes.
func TestSplicedRenderAllocatesNothing(t *testing.T) {
	p := EmbeddedPage()
	renders := map[string]func([]byte, *Data) []byte{
		"plain": func(dst []byte, d *Data) []byte { b, _ := p.Render(dst, d); return b },
		"gzip":  func(dst []byte, d *Data) []byte { b, _ := p.RenderGzip(dst, d); return b },
	}
	for name, render := range renders {
		d := Data{Room: "shop", Lang: "fr", State: "prequeue", Mode: "fifo", Position: 1234, Waiting: 56789, Capacity: 2,
			RefreshSeconds: 5, ETAKnown: true, ETASeconds: 4000, Progress: 40, StartsInSeconds: 700, Nonce: "n0Nc3n0Nc3n0Nc3n0Nc3ab"}
		buf := render(nil, &d)
		allocs := testing.AllocsPerRun(100, func() {
			d.Position++
			buf = render(buf[:0], &d)
		})
		if allocs != 0 {
			t.Fatalf("a spliced %s render allocates %.1f times", name, allocs)
		}
	}
}

// Pages render from many goroutines at once while frames are being built.
func TestPageConcurrentRenders(t *testing.T) {
	p := EmbeddedPage()
	var pages []Data
	eachPage(true, func(d Data) { pages = append(pages, d) })
	want := make([]string, len(pages))
	for i, d := range pages {
		want[i] = direct(t, DefaultTemplate(), d)
	}
	done := make(chan string)
	for g := range 4 {
		go func() {
			var buf []byte
			for i := range pages {
				d := pages[(i+g*7)%len(pages)]
				var err error
				if buf, err = p.Render(buf[:0], &d); err != nil || string(buf) != want[(i+g*7)%len(pages)] {
					done <- fmt.Sprintf("page %d: %v", i, err)
					return
				}
			}
			done <- ""
		}()
	}
	for range 4 {
		if msg := <-done; msg != "" {
			t.Fatal(msg)
		}
	}
}

// A frame is right only if every field of Data is in its key or spliced in: a
// field added to Data must be added to one of them.
func TestEveryPageFieldIsKeyedOrSpliced(t *testing.T) {
	keyed := map[string]bool{"Room": true, "Lang": true, "State": true, "Mode": true, "Lottery": true,
		"ETAKnown": true, "Capacity": true, "RefreshSeconds": true, "AwayTTLSeconds": true, "Returned": true, "T": true,
		"Message": true, "Reason": true, "Missed": true, "Handoff": true, "DrawURL": true}
	for _, name := range fieldNames {
		keyed[name] = true
	}
	for f := range reflect.TypeFor[Data]().Fields() {
		if !keyed[f.Name] {
			t.Errorf("Data.%s is neither in frameKey nor a volatile field", f.Name)
		}
	}
	if n := reflect.TypeFor[frameKey]().NumField(); n != 15 {
		t.Errorf("frameKey has %d fields; update this test with it", n)
	}
}
