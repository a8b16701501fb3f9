package page

import (
	"bytes"
	"compress/gzip"
	"io"
	"strings"
	"testing"
)

// inflate is what a browser makes of a gzip page: one member, checked against its
// CRC-32 and size, and nothing after it.
func inflate(t testing.TB, gz []byte) []byte {
	t.Helper()
	r := bytes.NewReader(gz)
	zr, err := gzip.NewReader(r)
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	zr.Multistream(false)
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("inflating: %v", err)
	}
	if r.Len() != 0 {
		t.Fatalf("%d bytes after the gzip member", r.Len())
	}
	return out
}

// The page goes out at well under half its size, not far from what compressing it
// whole would make of it.
func TestGzipPageSize(t *testing.T) {
	p := EmbeddedPage()
	for _, lang := range Languages() {
		d := Data{Room: "shop", Lang: lang, State: "queued", Mode: "fifo", Position: 1234, Waiting: 56789, Active: 100,
			Capacity: 100, RefreshSeconds: 5, ETAKnown: true, ETASeconds: 240, Progress: 40, Nonce: "n0Nc3n0Nc3n0Nc3n0Nc3ab"}
		plain, _ := p.Render(nil, &d)
		gz, ok := p.RenderGzip(nil, &d)
		if !ok {
			t.Fatalf("%s: no gzip page", lang)
		}
		var whole bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&whole, gzip.BestCompression)
		_, _ = zw.Write(plain)
		_ = zw.Close()
		t.Logf("%s: page %d bytes, gzip page %d, the page gzipped whole %d", lang, len(plain), len(gz), whole.Len())
		if 2*len(gz) > len(plain) || 4*len(gz) > 5*whole.Len() {
			t.Errorf("%s: gzip page of %d bytes, for a page of %d that compresses whole to %d", lang, len(gz), len(plain), whole.Len())
		}
	}
}

// Pages of any shape: holes at either end, holes side by side, no holes, nothing.
func TestGzipPageShapes(t *testing.T) {
	for _, text := range []string{
		``,
		`static only`,
		`{{.Position}}`,
		`{{.Position}}{{.Waiting}}{{.Nonce}}`,
		`{{number .T .Waiting}} waiting <i nonce="{{.Nonce}}"></i>`,
		`<p>` + strings.Repeat("long static text, ", 5000) + `{{.Position}}</p>`,
	} {
		p, err := NewPage("shape.html", text)
		if err != nil {
			t.Fatal(err)
		}
		d := Data{Room: "shop", Lang: "de", State: "queued", Position: 12345, Waiting: 0, Nonce: "abc"}
		plain, _ := p.Render(nil, &d)
		gz, ok := p.RenderGzip([]byte("kept"), &d)
		if !ok || string(gz[:4]) != "kept" {
			t.Fatalf("%.40q: ok %v, dst %.8q", text, ok, gz)
		}
		if got := inflate(t, gz[4:]); !bytes.Equal(got, plain) {
			t.Fatalf("%.40q: inflates to %.80q, want %.80q", text, got, plain)
		}
	}
}

// What a frame cannot render, or a hole too long for a stored block, is not
// compressed: RenderGzip leaves dst as it came, and Render still writes the page.
func TestGzipPageDeclines(t *testing.T) {
	p := EmbeddedPage()
	base := Data{Room: "shop", Lang: "en", State: "queued", Mode: "fifo", Position: 5, Waiting: 9, Capacity: 2, RefreshSeconds: 5, Nonce: "abc"}
	for name, edit := range map[string]func(*Data){
		"own T":         func(d *Data) { d.T = Messages("en") },
		"negative":      func(d *Data) { d.Position = -4 },
		"escaped nonce": func(d *Data) { d.Nonce = `a+b/c="<>&` },
		"64 KiB nonce":  func(d *Data) { d.Nonce = strings.Repeat("n", 1<<16) },
	} {
		t.Run(name, func(t *testing.T) {
			d := base
			edit(&d)
			if gz, ok := p.RenderGzip([]byte("kept"), &d); ok || string(gz) != "kept" {
				t.Fatalf("RenderGzip = %.20q, %v; want dst as it came and false", gz, ok)
			}
			if _, err := p.Render(nil, &d); err != nil {
				t.Fatal(err)
			}
		})
	}
	unspliced, err := NewPage("mine.html", `{{if lt .Position 10}}soon{{else}}{{.Position}}{{end}}`)
	if err != nil {
		t.Fatal(err)
	}
	if gz, ok := unspliced.RenderGzip(nil, &base); ok || gz != nil {
		t.Fatalf("an unspliced page was compressed: %q", gz)
	}
	if got := renderPage(t, unspliced, base); got != "soon" {
		t.Fatalf("unspliced page = %q", got)
	}
}
