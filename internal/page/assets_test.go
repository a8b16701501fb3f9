package page

import (
	"bytes"
	"html"
	"html/template"
	"regexp"
	"strings"
	"testing"
)

func samplePageFor(lang string) Data {
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

// maxPageBytes keeps the page cheap for the server to send to every waiter. (It goes
// out gzipped, at well under half of this: TestGzipPageSize, and the browser's own
// count in TestBrowserPageIsAccessibleAndSelfContained.) The "Continue on another
// device" panel, its texts and its script take about 1.6 KiB of it, the draw's link
// and the receipt's panel and script about 0.5 KiB.
const maxPageBytes = 19<<10 + 512

func TestDefaultTemplateRenders(t *testing.T) {
	tests := []struct {
		lang string
		want []string
	}{
		{"en", []string{`<html lang="en"`, "1,234", "56,789", "about 4 minutes", "You are number", "Leave the queue", "keep this tab open"}},
		{"ko", []string{`<html lang="ko"`, "1,234", "56,789", "약 4분", "대기열 나가기"}},
		{"ja", []string{`<html lang="ja"`, "1,234", "56,789", "約4分", "順番待ちをやめる"}},
		{"zh", []string{`<html lang="zh"`, "1,234", "56,789", "约4分钟", "退出排队"}},
		{"es", []string{`<html lang="es"`, "1.234", "56.789", "unos 4 minutos", "Salir de la fila"}},
		{"de", []string{`<html lang="de"`, "1.234", "56.789", "etwa 4 Minuten", "Warteschlange verlassen"}},
		{"fr", []string{`<html lang="fr"`, "1" + nnbsp + "234", "56" + nnbsp + "789", "environ 4" + nbsp + "minutes", "Quitter la file d’attente"}},
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
				t.Error("rendering *Data differs from Data")
			}
		})
	}
}

func TestPageStates(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*Data)
		want    []string
		notWant []string
	}{
		{"eta unknown", func(p *Data) { p.ETAKnown = false }, []string{"estimating…", `"eta_seconds":null`}, []string{"about 4 minutes"}},
		{"refresh", func(p *Data) { p.RefreshSeconds = 7 }, []string{`<noscript><meta http-equiv="refresh" content="7"></noscript>`}, nil},
		{"refresh never zero", func(p *Data) { p.RefreshSeconds = 0 }, []string{`http-equiv="refresh" content="1"`}, nil},
		{"progress clamped", func(p *Data) { p.Progress = 250 }, []string{`value="100"`}, nil},
		{"queued shows queue", nil, []string{`<section id="wr-queued">`, `<section id="wr-unavailable" hidden>`}, nil},
		{"away kept", nil, []string{
			"your place is kept for <strong>10 minutes</strong>: come back to this page within that time.",
			"your number can go up when they come back", `"away_ttl_seconds":600`, `<p class="back" id="wr-back" hidden>`,
		}, []string{`"returned"`}},
		{"away off", func(p *Data) { p.AwayTTLSeconds = 0 }, nil, []string{`id="wr-away"`, "your number can go up", `"away_ttl_seconds"`}},
		{"no promise of a second", func(p *Data) { p.AwayTTLSeconds = 1 }, nil, []string{`id="wr-away"`}},
		{"returned", func(p *Data) { p.Returned = true }, []string{
			`<p class="back" id="wr-back">Welcome back — you kept your place.</p>`, `"returned":true`,
		}, nil},
		{"notify button", nil, []string{`<button type="button" id="wr-notify" class="quiet">Notify me when it&#39;s my turn</button>`}, nil},
		{"unavailable hides queue", func(p *Data) { p.State = "unavailable" }, []string{
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

// nnbsp and nbsp are the spaces French typography puts inside "1 234" and
// between a number and its unit, so neither is ever split across lines.
const nnbsp, nbsp = "\u202f", "\u00a0"

func TestETA(t *testing.T) {
	eta := Funcs()["eta"].(func(map[string]string, int) string)
	seconds := []int{-5, 0, 59, 61, 4 * 60, 23 * 60, 2 * 3600, 1000 * 3600}
	tests := map[string][]string{
		"en": {"less than a minute", "less than a minute", "less than a minute", "about 1 minute", "about 4 minutes", "about 25 minutes", "about 2 hours", "about 1,000 hours"},
		"ko": {"1분 미만", "1분 미만", "1분 미만", "약 1분", "약 4분", "약 25분", "약 2시간", "약 1,000시간"},
		"ja": {"1分未満", "1分未満", "1分未満", "約1分", "約4分", "約25分", "約2時間", "約1,000時間"},
		"zh": {"不到1分钟", "不到1分钟", "不到1分钟", "约1分钟", "约4分钟", "约25分钟", "约2小时", "约1,000小时"},
		"es": {"menos de un minuto", "menos de un minuto", "menos de un minuto", "alrededor de un minuto", "unos 4 minutos", "unos 25 minutos", "unas 2 horas", "unas 1.000 horas"},
		"de": {"weniger als eine Minute", "weniger als eine Minute", "weniger als eine Minute", "etwa eine Minute", "etwa 4 Minuten", "etwa 25 Minuten", "etwa 2 Stunden", "etwa 1.000 Stunden"},
		"fr": {"moins d’une minute", "moins d’une minute", "moins d’une minute", "environ une minute", "environ 4" + nbsp + "minutes", "environ 25" + nbsp + "minutes", "environ 2" + nbsp + "heures", "environ 1" + nnbsp + "000" + nbsp + "heures"},
	}
	for _, lang := range Languages() {
		want, ok := tests[lang]
		if !ok {
			t.Errorf("no ETA cases for %s", lang)
			continue
		}
		msgs := Messages(lang)
		for i, s := range seconds {
			if got := eta(msgs, s); got != want[i] {
				t.Errorf("eta(%s, %d) = %q, want %q", lang, s, got, want[i])
			}
		}
	}
}

// The plural forms ("about {n} minutes", "about {n} hours") are only right
// for n >= 2 in English, German, Spanish and French, and there is no singular
// for hours. The rounding must never hand them a 1, or a visitor reads "about
// 1 hours". (In Japanese, Chinese and Korean both forms read the same.)
func TestETANeverPluralOfOne(t *testing.T) {
	eta := Funcs()["eta"].(func(map[string]string, int) string)
	for _, lang := range Languages() {
		msgs := Messages(lang)
		e := etaTextsOf(msgs)
		bad := map[string]bool{string(e.fill(nil, msgs["eta_minutes_other"], 1)): true, string(e.fill(nil, msgs["eta_hours_other"], 1)): true}
		delete(bad, msgs["eta_minutes_one"])
		for s := 0; s <= 48*3600; s += 15 {
			if got := eta(msgs, s); bad[got] {
				t.Fatalf("eta(%s, %d) = %q", lang, s, got)
			}
		}
	}
}

// How long a place is kept is a promise: told in whole units, rounded down, never a
// plural of one.
func TestDuration(t *testing.T) {
	duration := Funcs()["duration"].(func(map[string]string, int) string)
	seconds := []int{2, 90, 119, 120, 599, 600, 7199, 7200, 9000, 1000 * 3600}
	tests := map[string][]string{
		"en": {"2 seconds", "90 seconds", "119 seconds", "2 minutes", "9 minutes", "10 minutes", "119 minutes", "2 hours", "2 hours", "1,000 hours"},
		"de": {"2 Sekunden", "90 Sekunden", "119 Sekunden", "2 Minuten", "9 Minuten", "10 Minuten", "119 Minuten", "2 Stunden", "2 Stunden", "1.000 Stunden"},
		"es": {"2 segundos", "90 segundos", "119 segundos", "2 minutos", "9 minutos", "10 minutos", "119 minutos", "2 horas", "2 horas", "1.000 horas"},
		"fr": {"2" + nbsp + "secondes", "90" + nbsp + "secondes", "119" + nbsp + "secondes", "2" + nbsp + "minutes", "9" + nbsp + "minutes", "10" + nbsp + "minutes", "119" + nbsp + "minutes", "2" + nbsp + "heures", "2" + nbsp + "heures", "1" + nnbsp + "000" + nbsp + "heures"},
		"ja": {"2秒", "90秒", "119秒", "2分", "9分", "10分", "119分", "2時間", "2時間", "1,000時間"},
		"ko": {"2초", "90초", "119초", "2분", "9분", "10분", "119분", "2시간", "2시간", "1,000시간"},
		"zh": {"2秒", "90秒", "119秒", "2分钟", "9分钟", "10分钟", "119分钟", "2小时", "2小时", "1,000小时"},
	}
	for _, lang := range Languages() {
		want, ok := tests[lang]
		if !ok {
			t.Errorf("no duration cases for %s", lang)
			continue
		}
		msgs := Messages(lang)
		for i, s := range seconds {
			if got := duration(msgs, s); got != want[i] {
				t.Errorf("duration(%s, %d) = %q, want %q", lang, s, got, want[i])
			}
		}
		e := etaTextsOf(msgs)
		for s := 2; s <= 48*3600; s += 59 {
			got := duration(msgs, s)
			for _, k := range []string{"duration_seconds", "duration_minutes", "duration_hours"} {
				if got == string(e.fill(nil, msgs[k], 1)) {
					t.Fatalf("duration(%s, %d) = %q", lang, s, got)
				}
			}
		}
	}
}

func TestNumber(t *testing.T) {
	number := Funcs()["number"].(func(map[string]string, int) string)
	numbers := []int{0, 7, 999, 1000, 1234, 56789, 123456, 1234567, -1234}
	comma := []string{"0", "7", "999", "1,000", "1,234", "56,789", "123,456", "1,234,567", "-1,234"}
	dot := []string{"0", "7", "999", "1.000", "1.234", "56.789", "123.456", "1.234.567", "-1.234"}
	space := []string{"0", "7", "999", "1" + nnbsp + "000", "1" + nnbsp + "234", "56" + nnbsp + "789", "123" + nnbsp + "456", "1" + nnbsp + "234" + nnbsp + "567", "-1" + nnbsp + "234"}
	tests := map[string][]string{"en": comma, "ko": comma, "ja": comma, "zh": comma, "es": dot, "de": dot, "fr": space}
	for _, lang := range Languages() {
		want, ok := tests[lang]
		if !ok {
			t.Errorf("no number cases for %s", lang)
			continue
		}
		msgs := Messages(lang)
		for i, n := range numbers {
			if got := number(msgs, n); got != want[i] {
				t.Errorf("number(%s, %d) = %q, want %q", lang, n, got, want[i])
			}
		}
	}
}
