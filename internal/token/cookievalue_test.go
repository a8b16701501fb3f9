package token

import (
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
)

// cookieValue must find what Request.Cookie finds, whatever the Cookie header holds.
func TestCookieValueIsRequestCookies(t *testing.T) {
	const name = "waiting_room_shop"
	lines := [][]string{
		nil,
		{""},
		{name + "=abc"},
		{"a=1; " + name + "=abc; b=2"},
		{"a=1;" + name + "=abc"},
		{"  " + name + " = abc  "},
		{name + `="abc"`},
		{name + `="abc`},
		{name + `=ab"c; ` + name + "=second"},
		{name + "=a b"},
		{name + "=a\\b; " + name + "=ok"},
		{name + "=\x7f; " + name + "=ok"},
		{name + "="},
		{name},
		{"x" + name + "=no; " + name + "x=no"},
		{"a=1", name + "=in the second line"},
		{"a=1; b=2", "c=3; " + name + "=v"},
		{";;;" + name + "=v;;"},
		{strings.Repeat("a=1;", 3000) + name + "=over the limit"},
		{strings.Repeat("a=1;", 2998) + name + "=at the limit"},
	}
	pieces := []string{name, "=", ";", " ", "\t", `"`, "abc", "\\", ",", "other", "\x01", "é"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var lineSet []string
		for range 1 + rng.IntN(2) {
			var b strings.Builder
			for range rng.IntN(12) {
				b.WriteString(pieces[rng.IntN(len(pieces))])
			}
			lineSet = append(lineSet, b.String())
		}
		lines = append(lines, lineSet)
	}
	for _, l := range lines {
		r := &http.Request{Header: http.Header{}}
		if l != nil {
			r.Header["Cookie"] = l
		}
		want := ""
		if c, err := r.Cookie(name); err == nil {
			want = c.Value
		}
		if got := cookieValue(l, name); got != want {
			t.Fatalf("Cookie lines %.200q: got %q, Request.Cookie gives %q", l, got, want)
		}
	}
}

func BenchmarkCookieValue(b *testing.B) {
	const name = "waiting_room_shop"
	r := &http.Request{Header: http.Header{"Cookie": {"_ga=GA1.2.3; " + name + "=" + strings.Repeat("x", 60) + "; theme=dark"}}}
	b.Run("RequestCookie", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if c, err := r.Cookie(name); err != nil || c.Value == "" {
				b.Fatal("no cookie")
			}
		}
	})
	b.Run("cookieValue", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if cookieValue(r.Header["Cookie"], name) == "" {
				b.Fatal("no cookie")
			}
		}
	})
}
