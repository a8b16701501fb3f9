package caddytest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An example whose instances serve plain HTTP behind a balancer that terminates TLS
// (auto_https off) marks the room's cookie Secure itself: the instance sees no TLS, so
// the default would send the visitor's token without it, and a browser would hand it
// back over plain HTTP too.
func TestExamplesBehindTLSMarkTheCookieSecure(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "examples", "*.caddyfile"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(src), "auto_https off") {
			continue
		}
		walkHandlers(t, adapt(t, file), func(h map[string]any, _ any) {
			if h["handler"] != "waiting_room" {
				return
			}
			checked++
			cookie, _ := h["cookie"].(map[string]any)
			if secure, _ := cookie["secure"].(bool); !secure {
				t.Errorf("%s: room %v behind a TLS balancer has cookie %v, without secure", filepath.Base(file), h["name"], cookie)
			}
		})
	}
	if checked == 0 {
		t.Fatal("no example behind a TLS balancer has a waiting room; the fleet example is gone?")
	}
}
