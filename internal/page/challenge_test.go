package page

import (
	"encoding/json"
	"html/template"
	"strings"
	"testing"
)

func TestChallengePageInEveryLanguage(t *testing.T) {
	for _, lang := range Languages() {
		body, err := RenderChallenge(nil, &ChallengeData{Room: "shop<1>", Lang: lang, Challenge: "Q_-abc", Difficulty: 12, Nonce: "n0nce"})
		if err != nil {
			t.Fatalf("%s: %v", lang, err)
		}
		page := string(body)
		msgs := Messages(lang)
		for _, want := range []string{
			`data-challenge="Q_-abc"`, `data-difficulty="12"`,
			`<script nonce="n0nce">`, `<style nonce="n0nce">`,
			"<noscript><p id=\"wr-noscript\" class=\"card strong\">" + template.HTMLEscapeString(msgs["challenge_noscript"]) + "</p></noscript>",
			"shop&lt;1&gt;",
		} {
			if !strings.Contains(page, want) {
				t.Errorf("%s: page lacks %q", lang, want)
			}
		}
		if lang != defaultLang && msgs["challenge_noscript"] == Messages(defaultLang)["challenge_noscript"] {
			t.Errorf("%s: the JavaScript notice is not translated", lang)
		}
		// Nothing external: no script or style from elsewhere, no inline handler.
		for _, bad := range []string{"src=", "href=\"http", "onload", "onclick", "<link rel=\"stylesheet\""} {
			if strings.Contains(page, bad) {
				t.Errorf("%s: page contains %q", lang, bad)
			}
		}
	}
}

func TestChallengeJSON(t *testing.T) {
	out := AppendChallengeJSON(nil, `sh"op`, "Q_-abc", 16)
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if got["room"] != `sh"op` || got["status"] != "challenge" || got["challenge"] != "Q_-abc" || got["difficulty"] != 16.0 || len(got) != 4 {
		t.Fatalf("challenge JSON = %s", out)
	}
}
