package waitingroom

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The syntax block in UnmarshalCaddyfile's doc comment (what caddyserver.com's module
// page shows) is the one of docs/caddyfile.md, comments aside: neither can gain or
// lose a sub-directive alone.
func TestSyntaxBlockIsTheManuals(t *testing.T) {
	src, err := os.ReadFile("caddyfile.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../docs/caddyfile.md")
	if err != nil {
		t.Fatal(err)
	}
	comment := regexp.MustCompile(`(?s)// UnmarshalCaddyfile sets up the handler from Caddyfile tokens\. Syntax:\n//\n(.*?)\n//\n`).FindSubmatch(src)
	manual := regexp.MustCompile("(?s)## Syntax\n\n```caddyfile\n(.*?)\n```").FindSubmatch(doc)
	if comment == nil || manual == nil {
		t.Fatalf("syntax block not found: in the doc comment %v, in the manual %v", comment != nil, manual != nil)
	}
	var fromComment []string
	for _, l := range strings.Split(string(comment[1]), "\n") {
		fromComment = append(fromComment, strings.TrimPrefix(strings.TrimPrefix(l, "//"), "\t"))
	}
	got, want := syntaxLines(strings.Join(fromComment, "\n")), syntaxLines(string(manual[1]))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the doc comment's syntax block differs from docs/caddyfile.md's:\ncomment:\n%s\n\nmanual:\n%s",
			strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// syntaxLines is a syntax block without its comments, each line's spaces run together.
func syntaxLines(block string) []string {
	var out []string
	for _, l := range strings.Split(block, "\n") {
		if i := strings.Index(l, "#"); i >= 0 {
			l = l[:i]
		}
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			out = append(out, l)
		}
	}
	return out
}
