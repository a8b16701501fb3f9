package assets

import (
	"bytes"
	"html"
	"html/template"
	"regexp"
	"strings"
	"testing"
)

func samplePageFor(lang string) PageData {
	p := samplePage()
	p.Room, p.Lang, p.T = "shop", lang, Messages(lang)
	p.Position, p.Waiting, p.ETASeconds, p.Nonce = 1234, 56789, 240, "n0Nc3+/="
	return p
}

func render(t *testing.T, tmpl *template.Template, data any) string {
	t.Helper()
	var b bytes.Buffer
	if err := tmpl.Execute(&b, data); err != nil {
		t.Fatalf("rendering: %v", err)
	}
	return b.String()
}

// maxPageBytes keeps the page cheap for the server to send to every waiter.
const maxPageBytes = 15 << 10

func TestDefaultTemplateRenders(t *testing.T) {
	tests := []struct {
		lang string
		want []string
	}{
		{"en", []string{`<html lang="en"`, "1,234", "56,789", "about 4 minutes", "You are number", "Leave the queue", "keep this tab open"}},
		{"ko", []string{`<html lang="ko"`, "1,234", "56,789", "약 4분", "대기열 나가기"}},
	}
	for _, tt := range tests {
		t.Run(tt.lang, func(t *testing.T) {
			page := samplePageFor(tt.lang)
			out := render(t, DefaultTemplate(), page)
			for _, want := range tt.want {
				if !strings.Contains(out, want) {
					t.Errorf("page lacks %q", want)
				}
			}
			if len(out) >= maxPageBytes {
				t.Errorf("page is %d bytes, want < %d", len(out), maxPageBytes)
			}
			t.Logf("%s page: %d bytes", tt.lang, len(out))
			// A pointer renders the same page, so the handler may pass either.
			if ptr := render(t, DefaultTemplate(), &page); ptr != out {
				t.Error("rendering *PageData differs from PageData")
			}
		})
	}
}

func TestPageStates(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*PageData)
		want    []string
		notWant []string
	}{
		{"eta unknown", func(p *PageData) { p.ETAKnown = false }, []string{"estimating…", `"eta_seconds":null`}, []string{"about 4 minutes"}},
		{"refresh", func(p *PageData) { p.RefreshSeconds = 7 }, []string{`<noscript><meta http-equiv="refresh" content="7"></noscript>`}, nil},
		{"refresh never zero", func(p *PageData) { p.RefreshSeconds = 0 }, []string{`http-equiv="refresh" content="1"`}, nil},
		{"progress clamped", func(p *PageData) { p.Progress = 250 }, []string{`value="100"`}, nil},
		{"queued shows queue", nil, []string{`<section id="wr-queued">`, `<section id="wr-unavailable" hidden>`}, nil},
		{"unavailable hides queue", func(p *PageData) { p.State = "unavailable" }, []string{
			`<section id="wr-queued" hidden>`, `<section id="wr-unavailable">`, "temporarily unavailable", "retrying automatically",
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := samplePageFor("en")
			if tt.edit != nil {
				tt.edit(&page)
			}
			out := render(t, DefaultTemplate(), page)
			for _, want := range tt.want {
				if !strings.Contains(out, want) {
					t.Errorf("page lacks %q", want)
				}
			}
			for _, bad := range tt.notWant {
				if strings.Contains(out, bad) {
					t.Errorf("page has %q", bad)
				}
			}
		})
	}
}

// The server's CSP allows only nonced inline code: every <script> that runs
// and every <style> must carry the nonce, and nothing may rely on inline
// handlers or style attributes.
func TestPageWorksUnderCSP(t *testing.T) {
	page := samplePageFor("en")
	out := render(t, DefaultTemplate(), page)
	nonce := `nonce="` + page.Nonce + `"`
	for _, tag := range regexp.MustCompile(`<(script|style)[^>]*>`).FindAllString(out, -1) {
		tag = html.UnescapeString(tag) // html/template writes + as &#43;; the browser reads it back
		if strings.Contains(tag, `type="application/json"`) {
			continue // data, never executed
		}
		if !strings.Contains(tag, nonce) {
			t.Errorf("%s lacks %s", tag, nonce)
		}
	}
	if bad := regexp.MustCompile(`(?i)\s(on[a-z]+|style)=`).FindString(out); bad != "" {
		t.Errorf("page has inline attribute %q", bad)
	}
	if bad := regexp.MustCompile(`(?i)(src|href)="(https?:)?//`).FindString(out); bad != "" {
		t.Errorf("page makes an external request: %q", bad)
	}
	for _, bad := range []string{"eval(", "new Function", "innerHTML", "location.reload"} {
		if strings.Contains(out, bad) {
			t.Errorf("page uses %s", bad)
		}
	}
}

func TestHostileValuesAreEscaped(t *testing.T) {
	const evil = `</script><script>alert(1)</script>`
	page := samplePageFor("en")
	page.Room = evil
	page.Nonce = `"><script>alert(2)</script>`
	page.Lang = `en"><script>alert(3)</script>`
	out := render(t, DefaultTemplate(), page)
	if strings.Contains(out, "<script>alert") {
		t.Errorf("hostile value reached the page unescaped")
	}
	if n := strings.Count(out, "</script>"); n != 2 {
		t.Errorf("page has %d </script>, want the 2 of its own", n)
	}
}

func TestNewTemplate(t *testing.T) {
	tests := []struct {
		name, text string
		ok         bool
	}{
		{"own page", `<p>{{.T.heading}} {{number .T .Position}}, {{if .ETAKnown}}{{eta .T .ETASeconds}}{{end}}</p>`, true},
		{"unclosed action", `<p>{{.Position</p>`, false},
		{"unclosed if", `{{if .ETAKnown}}<p>`, false},
		{"unknown func", `{{frobnicate .Position}}`, false},
		{"unknown field", `<p>{{.Positon}}</p>`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := NewTemplate("mine.html", tt.text)
			if (err == nil) != tt.ok {
				t.Fatalf("NewTemplate error = %v, want ok = %v", err, tt.ok)
			}
			if tt.ok {
				out := render(t, tmpl, samplePageFor("en"))
				if !strings.Contains(out, "1,234") {
					t.Errorf("own page = %q, lacks the position", out)
				}
			}
		})
	}
}

func TestETA(t *testing.T) {
	eta := Funcs()["eta"].(func(map[string]string, int) string)
	tests := []struct {
		seconds int
		en, ko  string
	}{
		{-5, "less than a minute", "1분 미만"},
		{0, "less than a minute", "1분 미만"},
		{30, "less than a minute", "1분 미만"},
		{59, "less than a minute", "1분 미만"},
		{61, "about 1 minute", "약 1분"},
		{4 * 60, "about 4 minutes", "약 4분"},
		{23 * 60, "about 25 minutes", "약 25분"},
		{2 * 3600, "about 2 hours", "약 2시간"},
		{1000 * 3600, "about 1,000 hours", "약 1,000시간"},
	}
	en, ko := Messages("en"), Messages("ko")
	for _, tt := range tests {
		if got := eta(en, tt.seconds); got != tt.en {
			t.Errorf("eta(en, %d) = %q, want %q", tt.seconds, got, tt.en)
		}
		if got := eta(ko, tt.seconds); got != tt.ko {
			t.Errorf("eta(ko, %d) = %q, want %q", tt.seconds, got, tt.ko)
		}
	}
}

func TestNumber(t *testing.T) {
	number := Funcs()["number"].(func(map[string]string, int) string)
	en := Messages("en")
	for n, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 123456: "123,456", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := number(en, n); got != want {
			t.Errorf("number(%d) = %q, want %q", n, got, want)
		}
	}
}
