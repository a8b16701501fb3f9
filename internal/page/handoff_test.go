package page

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image/png"
	"strings"
	"testing"

	qrcode "github.com/skip2/go-qrcode"
)

// A queued page offers to continue on another device, with the QR code's image and
// the link's field labelled for a screen reader; a page whose place moved says so in
// the visitor's language and offers nothing at all (no script, no button, no link
// that would join or rejoin); a visitor whose code did not hold is told so, and one
// who followed another site's link that it kept its place.
func TestPageHandoffStates(t *testing.T) {
	for _, lang := range Languages() {
		T := Messages(lang)
		queued := samplePageFor(lang)
		out := render(t, DefaultTemplate(), queued)
		for _, want := range []string{`id="wr-handoff"`, `id="wr-handoff-qr"`, `alt="` + T["handoff_qr_label"] + `"`,
			`<label for="wr-handoff-link">`, `id="wr-handoff-link" type="text" readonly`} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: the queued page lacks %q", lang, want)
			}
		}
		if strings.Contains(out, T["handoff_invalid"]) || strings.Contains(out, T["moved_heading"]) {
			t.Errorf("%s: the queued page says a code did not hold, or that the place moved", lang)
		}

		moved := samplePageFor(lang)
		moved.State = "moved"
		out = render(t, DefaultTemplate(), moved)
		if !strings.Contains(out, T["moved_heading"]) || !strings.Contains(out, T["moved_text"]) {
			t.Errorf("%s: the moved page does not say the place moved", lang)
		}
		for _, bad := range []string{"<script", "<button", "<a ", `http-equiv="refresh"`, `<section id="wr-queued">`} {
			if strings.Contains(out, bad) {
				t.Errorf("%s: the moved page has %q: it must offer nothing", lang, bad)
			}
		}

		invalid := samplePageFor(lang)
		invalid.Handoff = "invalid"
		if out := render(t, DefaultTemplate(), invalid); !strings.Contains(out, T["handoff_invalid"]) {
			t.Errorf("%s: the page of a visitor whose code did not hold does not say so", lang)
		}

		refused := samplePageFor(lang)
		refused.Handoff = "refused"
		out = render(t, DefaultTemplate(), refused)
		if T["handoff_refused"] == "" || !strings.Contains(out, T["handoff_refused"]) || strings.Contains(out, T["handoff_invalid"]) {
			t.Errorf("%s: the page of a visitor who kept its place against another site's link does not say so", lang)
		}
	}
}

// The QR code is a PNG in a data: URL, of the size the page shows, and the answer
// that carries it is JSON.
func TestHandoffQR(t *testing.T) {
	link := "https://shop.example/tickets?waiting_room_handoff=" + strings.Repeat("A", 67)
	qr, err := HandoffQR(link)
	if err != nil {
		t.Fatal(err)
	}
	raw, ok := strings.CutPrefix(qr, "data:image/png;base64,")
	if !ok {
		t.Fatalf("the QR code is %.40q..., want a PNG data: URL", qr)
	}
	b, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if r := img.Bounds(); r.Dx() != qrSize || r.Dy() != qrSize {
		t.Fatalf("the QR code is %v, want %d square", r, qrSize)
	}
	var answer map[string]any
	if err := json.Unmarshal(AppendHandoffJSON(nil, "shop", "queued", link, qr, 600), &answer); err != nil {
		t.Fatal(err)
	}
	if answer["handoff_url"] != link || answer["handoff_qr"] != qr || answer["expires_seconds"] != 600.0 || answer["status"] != "queued" {
		t.Fatalf("the answer reads %v", answer)
	}
}

// What a drawn code costs is bounded whatever the address: the longest link drawn,
// of bytes that QR codes hold least densely, is at most a version 12 symbol (65
// modules a side, where a usual link is a version 7 of 45), and a longer link, a
// 2.2 KB or an 8 KB query string's, is not drawn at all. The version is the library's
// (skip2/go-qrcode): this pins what MaxQRLink's figures rely on.
func TestHandoffQRBound(t *testing.T) {
	longest := "https://shop.example/drop?q=" + strings.Repeat("a%", (MaxQRLink-28)/2)
	longest += strings.Repeat("a", MaxQRLink-len(longest))
	q, err := qrcode.New(longest, qrcode.Medium)
	if err != nil {
		t.Fatal(err)
	}
	if q.VersionNumber > 12 {
		t.Fatalf("the longest link drawn (%d bytes) is a version %d symbol, want at most 12", len(longest), q.VersionNumber)
	}
	if qr, err := HandoffQR(longest); err != nil || qr == "" {
		t.Fatalf("the longest link was not drawn: %v", err)
	}
	for _, n := range []int{MaxQRLink + 1, 2200, 8000} {
		link := "https://shop.example/drop?q=" + strings.Repeat("a", n-28)
		if qr, err := HandoffQR(link); err == nil || qr != "" {
			t.Errorf("a link of %d bytes was drawn", len(link))
		}
	}
}

// BenchmarkHandoffQR is what a code costs to draw: the reason an instance gives out a
// bounded number of them (internal/room/timing.go). A usual link, the longest drawn,
// and what a 2.2 KB query string would cost were it drawn.
func BenchmarkHandoffQR(b *testing.B) {
	usual := "https://shop.example/drop?waiting_room_handoff=" + strings.Repeat("A", 86)
	longest := "https://shop.example/drop?q=" + strings.Repeat("a%", (MaxQRLink-28)/2)
	for _, c := range []struct{ name, link string }{{"usual", usual}, {"longest", longest}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := HandoffQR(c.link); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("undrawn_2200", func(b *testing.B) {
		link := "https://shop.example/drop?q=" + strings.Repeat("a", 2200)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := qrcode.Encode(link, qrcode.Medium, qrSize); err != nil {
				b.Fatal(err)
			}
		}
	})
}
