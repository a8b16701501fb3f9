package caddytest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The admin API page shows the same proxy as Caddyfile.example, which the browser
// tests run.
func TestDashboardProxyDocumentedAlike(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "Caddyfile.example"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "admin-api.md"))
	if err != nil {
		t.Fatal(err)
	}
	example := string(raw)
	for _, block := range []string{
		between(t, example, "\tadmin localhost:2019 {\n", "\n\t}\n"),
		between(t, example, "http://localhost:8081 {\n", "\n}\n"),
	} {
		if !strings.Contains(string(doc), block) {
			t.Errorf("docs/admin-api.md does not show Caddyfile.example's\n%s", block)
		}
	}
	if strings.Contains(example, "header_up Origin") {
		t.Error("the documented proxy rewrites Origin, which lets any web page drive the admin API")
	}
}
