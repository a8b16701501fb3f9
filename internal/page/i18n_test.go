package page

import (
	"slices"
	"strings"
	"testing"
)

func TestLanguages(t *testing.T) {
	want := []string{"de", "en", "es", "fr", "ja", "ko", "zh"}
	if got := Languages(); !slices.Equal(got, want) {
		t.Errorf("Languages() = %v, want %v", got, want)
	}
}

// A configured language must be one Messages really has, spelt as Languages
// spells it.
func TestSupported(t *testing.T) {
	for _, lang := range Languages() {
		if !Supported(lang) {
			t.Errorf("Supported(%q) = false", lang)
		}
	}
	for _, tag := range []string{"", "xx", "zh-CN", "ZH", "de-AT", "en ", "*"} {
		if Supported(tag) {
			t.Errorf("Supported(%q) = true", tag)
		}
	}
}

// Every translation must say everything English says (and nothing more), or
// that language's visitors see English mixed in or a text nobody renders.
func TestTranslationsHaveSameKeys(t *testing.T) {
	en := catalog[defaultLang]
	for _, lang := range Languages() {
		msgs := catalog[lang]
		for k := range en {
			if msgs[k] == "" {
				t.Errorf("%s.json lacks %q", lang, k)
			}
		}
		for k := range msgs {
			if _, ok := en[k]; !ok {
				t.Errorf("%s.json has %q, which en.json lacks", lang, k)
			}
		}
		for _, k := range clientKeys {
			if _, ok := msgs[k]; !ok {
				t.Errorf("%s.json lacks %q, which the page's script needs", lang, k)
			}
		}
		if !strings.Contains(msgs["away_kept"], "{time}") {
			t.Errorf("%s.json away_kept = %q lacks {time}", lang, msgs["away_kept"])
		}
		for _, k := range []string{"position", "eta_minutes_other", "eta_hours_other", "announce_position",
			"duration_seconds", "duration_minutes", "duration_hours"} {
			if !strings.Contains(msgs[k], "{n}") {
				t.Errorf("%s.json %q = %q lacks {n}", lang, k, msgs[k])
			}
		}
	}
}

func TestMessages(t *testing.T) {
	tests := []struct{ lang, key, want string }{
		{"en", "leave", "Leave the queue"},
		{"ko", "leave", "대기열 나가기"},
		{"ja", "leave", "順番待ちをやめる"},
		{"zh", "leave", "退出排队"},
		{"es", "leave", "Salir de la fila"},
		{"de", "leave", "Warteschlange verlassen"},
		{"fr", "leave", "Quitter la file d’attente"},
		{"xx", "leave", "Leave the queue"},
		{"", "leave", "Leave the queue"},
	}
	for _, tt := range tests {
		if got := Messages(tt.lang)[tt.key]; got != tt.want {
			t.Errorf("Messages(%q)[%q] = %q, want %q", tt.lang, tt.key, got, tt.want)
		}
	}
	// Each call is the caller's own map.
	Messages("en")["leave"] = "changed"
	if Messages("en")["leave"] != "Leave the queue" {
		t.Error("changing a returned map changed the catalog")
	}
}

func TestNegotiate(t *testing.T) {
	tests := []struct{ header, want string }{
		{"", "en"},
		{"ko", "ko"},
		{"ko-KR", "ko"},
		{"KO-kr", "ko"},
		{"ko-KR,ko;q=0.9,en-US;q=0.8,en;q=0.7", "ko"},
		{"en-US,en;q=0.9,ko;q=0.8", "en"},
		{"en;q=0.5, ko;q=0.8", "ko"},
		{"fr-FR, fr;q=0.9, ko;q=0.3", "fr"},
		{"pt-BR, pt;q=0.9, ko;q=0.3", "ko"},
		{"pt", "en"},
		{"*", "en"},
		{"ko, *;q=0.1", "ko"},
		{"*;q=0.5, ko;q=0", "en"},
		{"ko;q=0", "en"},
		{"en;q=0, ko;q=0", "en"},
		{"ko;q=1.5, en;q=0.1", "en"},
		{"ko;q=abc", "en"},
		{"ko;q=NaN", "en"},
		{"ko ; q = 0.9 , en ; q = 0.8", "ko"},
		{"en;q=0.8, ko;q=0.8", "en"},
		{"ko;q=0.8, en;q=0.8", "ko"},
		{"ja", "ja"},
		{"ja-JP,ja;q=0.9,en-US;q=0.8", "ja"},
		{"zh-CN", "zh"},
		{"zh-CN,zh;q=0.9,en;q=0.8", "zh"},
		{"zh-Hans", "zh"},
		{"zh-Hans-CN", "zh"},
		{"zh-SG", "zh"},
		{"zh-TW", "zh"}, // Simplified over English until there is a Traditional page
		{"zh-Hant-HK, en;q=0.5", "zh"},
		{"es", "es"},
		{"es-ES,es;q=0.9", "es"},
		{"es-419", "es"},
		{"es-MX,en;q=0.5", "es"},
		{"de", "de"},
		{"de-DE,de;q=0.9,en;q=0.8", "de"},
		{"de-AT", "de"},
		{"de-CH, fr-CH;q=0.9", "de"},
		{"fr", "fr"},
		{"fr-CA", "fr"},
		{"fr-CA,fr;q=0.9,en-CA;q=0.8,en;q=0.7", "fr"},
		{"nl-BE, fr-BE;q=0.8, en;q=0.5", "fr"},
		{"en-GB, de;q=0.9", "en"},
		{",,,;;;===", "en"},
		{"\x00\xff\xfe;q=\x00", "en"},
		{"ko-", "en"}, // x/text reads no tag with a dangling "-"
		{strings.Repeat("x-y;q=0.1,", 100000) + "ko", "en"},
		{"ko," + strings.Repeat("a", 1<<20), "ko"},
	}
	for _, tt := range tests {
		name := tt.header
		if len(name) > 40 {
			name = name[:40] + "..."
		}
		t.Run(name, func(t *testing.T) {
			if got := Negotiate(tt.header); got != tt.want {
				t.Errorf("Negotiate(%q) = %q, want %q", name, got, tt.want)
			}
		})
	}
}

// With more languages, "*" must still mean the default, not the first in
// alphabetical order.
func TestNegotiateMoreLanguages(t *testing.T) {
	langs := []string{"de", "en", "ko", "zh-hant"}
	tests := []struct{ header, want string }{
		{"*", "en"},
		{"de-AT, *;q=0.5", "de"},
		{"ko;q=0.2, *;q=0.5", "ko"}, // "*" names no language x/text can match
		{"zh", "zh-hant"},
		{"zh-Hant-TW", "zh-hant"},
		{"zh-Hans", "zh-hant"}, // the closest Chinese there is
	}
	for _, tt := range tests {
		if got := newMatcher(langs).negotiate(tt.header); got != tt.want {
			t.Errorf("negotiate(%q) = %q, want %q", tt.header, got, tt.want)
		}
	}
}

func FuzzNegotiate(f *testing.F) {
	for _, s := range []string{"", "ko-KR,ko;q=0.9", "*;q=0.1", ";q=", "ko;q=1e308"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		if got := Negotiate(header); !slices.Contains(Languages(), got) {
			t.Errorf("Negotiate(%q) = %q, not a supported language", header, got)
		}
	})
}
