// Package drawtest is for tests: the files docs/fairness.md holds (its verifier script
// and its worked example), and the verifier run with node, as a reader of the page
// would run it. internal/draw's tests and caddytest's (on real receipts) share it.
package drawtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// DocsFiles returns the fenced blocks of the Markdown page at path whose info string
// names a file ("```json receipt.json"), by that name, each as its lines with a final
// "\n". want are the names the page must have.
func DocsFiles(t testing.TB, path string, want ...string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string]string{}
	var name, fence string
	var body strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if trimmed == fence {
				if name != "" {
					files[name] = body.String()
				}
				fence, name = "", ""
				body.Reset()
				continue
			}
			body.WriteString(line + "\n")
			continue
		}
		if info, ok := strings.CutPrefix(trimmed, "```"); ok {
			fence = "```"
			if fields := strings.Fields(info); len(fields) == 2 {
				name = fields[1]
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if files[w] == "" {
			t.Fatalf("%s has no block named %s", path, w)
		}
	}
	return files
}

// Verifier writes the verifier script of the page at path (its block named
// verify-receipt.mjs) to a temporary directory and returns a function that runs it
// with node on a receipt, a page and (when not nil) an entries list: its output, and
// whether it accepted (exit 0). Any other end of the script fails the test. Without
// node the test is skipped, loudly, unless CI is set: then it fails.
func Verifier(t testing.TB, path string) func(receipt, page, entries []byte) (string, bool) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		banner := "\n*************************************************************\n" +
			"*** node is not on PATH: the docs' verifier script cannot be run (install Debian's nodejs)\n" +
			"*************************************************************"
		if os.Getenv("CI") != "" {
			t.Fatal(banner + "\n(CI is set, so this is a failure, not a skip)")
		}
		t.Skip(banner)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "verify-receipt.mjs")
	if err := os.WriteFile(script, []byte(DocsFiles(t, path, "verify-receipt.mjs")["verify-receipt.mjs"]), 0o644); err != nil {
		t.Fatal(err)
	}
	n := 0
	return func(receipt, page, entries []byte) (string, bool) {
		t.Helper()
		n++
		args := []string{script}
		for _, f := range []struct {
			name string
			data []byte
		}{{"receipt", receipt}, {"page", page}, {"entries", entries}} {
			if f.data == nil {
				continue
			}
			p := filepath.Join(dir, fmt.Sprintf("%s-%d", f.name, n))
			if err := os.WriteFile(p, f.data, 0o644); err != nil {
				t.Fatal(err)
			}
			args = append(args, p)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var out bytes.Buffer
		cmd := exec.CommandContext(ctx, node, args...)
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("running node: %v", err)
		}
		if err != nil && exit.ExitCode() != 1 {
			t.Fatalf("the script exited with %d: %s", exit.ExitCode(), out.String())
		}
		return strings.TrimSpace(out.String()), err == nil
	}
}
