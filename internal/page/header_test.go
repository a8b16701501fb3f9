package page

import (
	"net/http"
	"reflect"
	"testing"
)

// SetHeader is Header.Set for every field but Vary, which it adds to; later changes
// to one field never reach another.
func TestSetHeaderIsSetAndAdd(t *testing.T) {
	fields := []Field{{"Cache-Control", "no-store"}, {"Vary", "Accept"}, {"Content-Type", "text/html"}}
	for _, before := range []http.Header{
		{},
		{"Cache-Control": {"max-age=60", "public"}, "Vary": {"Origin"}, "X-Other": {"kept"}},
	} {
		want, got := before.Clone(), before.Clone()
		for _, f := range fields {
			if f.Name == "Vary" {
				want.Add(f.Name, f.Value)
			} else {
				want.Set(f.Name, f.Value)
			}
		}
		SetHeader(got, fields...)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("from %v: got %v, want %v", before, got, want)
		}
		got["Cache-Control"] = append(got["Cache-Control"], "private")
		got.Add("Content-Type", "x")
		if got.Get("Content-Type") != "text/html" || len(got.Values("Content-Type")) != 2 || len(got.Values("Cache-Control")) != 2 {
			t.Fatalf("appending to one field changed another: %v", got)
		}
	}
}

// A page's policy allows exactly its nonce, which is fresh every time and made of
// letters and digits only.
func TestPageCSPCarriesItsNonce(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		csp, nonce := NewCSP()
		if csp != CSP(nonce) {
			t.Fatalf("policy %q is not the one for nonce %q", csp, nonce)
		}
		if len(nonce) != nonceLen || seen[nonce] {
			t.Fatalf("nonce %q: wrong length or seen before", nonce)
		}
		for _, c := range nonce {
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
				t.Fatalf("nonce %q has %q", nonce, c)
			}
		}
		seen[nonce] = true
	}
}
