package caddywaitingroom

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// linkTarget finds the target of every inline markdown link or image: `](target)` or
// `](target "title")`.
var linkTarget = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// scheme matches a link that leaves the repository (http:, https:, mailto:, ...).
var scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

// TestDocLinksResolve keeps the manual's relative links working: every link in the
// README, CONTRIBUTING.md and docs/*.md names a file or directory that exists, and every
// #fragment into a markdown file names one of its headings.
func TestDocLinksResolve(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{"README.md", "CONTRIBUTING.md"}, pages...)
	if len(pages) < 3 {
		t.Fatalf("no pages in docs/")
	}
	anchors := map[string]map[string]bool{} // file -> heading slugs, read once each
	slugsOf := func(file string) map[string]bool {
		if s, ok := anchors[file]; ok {
			return s
		}
		s, err := headingSlugs(file)
		if err != nil {
			t.Errorf("reading %s: %v", file, err)
		}
		anchors[file] = s
		return s
	}
	for _, page := range pages {
		links, err := markdownLinks(page)
		if err != nil {
			t.Errorf("reading %s: %v", page, err)
			continue
		}
		for _, link := range links {
			if scheme.MatchString(link) {
				continue
			}
			path, fragment, _ := strings.Cut(link, "#")
			target := page
			if path != "" {
				target = filepath.Join(filepath.Dir(page), filepath.FromSlash(path))
				if _, err := os.Stat(target); err != nil {
					t.Errorf("%s: link %q: %s does not exist", page, link, target)
					continue
				}
			}
			if fragment == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			if !slugsOf(target)[fragment] {
				t.Errorf("%s: link %q: %s has no heading with the anchor #%s", page, link, target, fragment)
			}
		}
	}
}

// markdownLinks returns the link targets of a markdown file, outside fenced code blocks
// and inline code.
func markdownLinks(file string) ([]string, error) {
	var links []string
	err := eachProseLine(file, func(line string) {
		for _, m := range linkTarget.FindAllStringSubmatch(withoutInlineCode(line), -1) {
			links = append(links, m[1])
		}
	})
	return links, err
}

// headingSlugs returns the anchors GitHub gives a markdown file's headings: lowercase,
// spaces to '-', punctuation other than '-' and '_' dropped; a repeated slug gets -1,
// -2, ... in order.
func headingSlugs(file string) (map[string]bool, error) {
	slugs := map[string]bool{}
	seen := map[string]int{}
	err := eachProseLine(file, func(line string) {
		text, ok := strings.CutPrefix(line, "#")
		if !ok {
			return
		}
		text = strings.TrimLeft(text, "#")
		if text != "" && text[0] != ' ' && text[0] != '\t' {
			return // "#foo" is not a heading
		}
		slug := slugify(strings.TrimSpace(text))
		if n := seen[slug]; n > 0 {
			slugs[slug+"-"+strconv.Itoa(n)] = true
		} else {
			slugs[slug] = true
		}
		seen[slug]++
	})
	return slugs, err
}

// slugify is GitHub's heading anchor rule.
func slugify(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// eachProseLine calls fn with every line of a markdown file outside fenced code blocks.
func eachProseLine(file string, fn func(string)) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	fence := "" // the opening fence while inside a code block
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) && strings.TrimLeft(trimmed, fence[:1]) == "" {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			for _, c := range trimmed[3:] {
				if c != rune(fence[0]) {
					break
				}
				fence += fence[:1]
			}
			continue
		}
		fn(line)
	}
	return sc.Err()
}

// withoutInlineCode blanks out `code spans`, where a `](x)` is not a link.
func withoutInlineCode(line string) string {
	parts := strings.Split(line, "`")
	for i := 1; i < len(parts); i += 2 {
		if i == len(parts)-1 {
			break // an unmatched backtick: the rest is prose
		}
		parts[i] = ""
	}
	return strings.Join(parts, "`")
}
