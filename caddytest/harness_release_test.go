package caddytest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// The previous release, built from its commit beside this tree's build, so a fleet can
// run both on one store (TestMultiUpgradeSideBySide). The commit is recorded in
// testdata/previous-release; CONTRIBUTING says when and how to move it forward.

// previousRelease reads the recorded commit: the first line of the file that is not a
// comment.
func previousRelease(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "previous-release"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if len(line) != 40 || strings.Trim(line, "0123456789abcdef") != "" {
			t.Fatalf("testdata/previous-release: %q is not a full 40-hex commit id", line)
		}
		return line
	}
	t.Fatal("testdata/previous-release names no commit")
	return ""
}

// previousBuild is the previous release's caddy binary, built once per test binary.
var previousBuild struct {
	once    sync.Once
	path    string
	missing string // why the commit cannot be had: skip, or fail on CI
	err     error
}

// previousCaddyBinary builds testdata/caddy as it was at the recorded commit: the
// commit's tree is written by git archive into a temporary directory (the working
// tree and the index are never touched), built there without -race as caddyBinary
// builds the current one, and the sources removed; the binary sits beside the
// current one, in the data dir TestMain removes. Without git, or outside a checkout,
// or in a clone that lacks the commit (a shallow one), the test skips with a loud
// message, and fails when CI is set.
func previousCaddyBinary(t testing.TB) string {
	t.Helper()
	commit := previousRelease(t)
	previousBuild.once.Do(func() {
		previousBuild.path, previousBuild.missing, previousBuild.err = buildRelease(t, commit)
	})
	if previousBuild.missing != "" {
		missingTool(t, previousBuild.missing)
	}
	if previousBuild.err != nil {
		t.Fatal(previousBuild.err)
	}
	return previousBuild.path
}

func buildRelease(t testing.TB, commit string) (bin, missing string, err error) {
	if _, err := exec.LookPath("git"); err != nil {
		return "", "git is not on PATH: the previous release cannot be built", nil
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", "this is not a git checkout: the previous release cannot be built", nil
	}
	repo := strings.TrimSpace(string(top))
	if err := exec.Command("git", "-C", repo, "cat-file", "-e", commit+"^{commit}").Run(); err != nil {
		return "", "commit " + commit + " (testdata/previous-release) is not in this clone " +
			"(a shallow clone? fetch with full history): the previous release cannot be built", nil
	}
	data := os.Getenv("XDG_DATA_HOME")
	src, err := os.MkdirTemp(data, "previous-release-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(src)
	start := time.Now()
	archive := exec.Command("git", "-C", repo, "archive", "--format=tar", commit)
	untar := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return "", "", err
	}
	untar.Stdin = pipe
	var archiveErr, untarErr bytes.Buffer
	archive.Stderr, untar.Stderr = &archiveErr, &untarErr
	if err := untar.Start(); err != nil {
		return "", "", fmt.Errorf("tar: %v", err)
	}
	if err := archive.Run(); err != nil {
		_ = untar.Wait()
		return "", "", fmt.Errorf("git archive %s: %v\n%s", commit, err, archiveErr.String())
	}
	if err := untar.Wait(); err != nil {
		return "", "", fmt.Errorf("tar -x of %s: %v\n%s", commit, err, untarErr.String())
	}
	dir := filepath.Join(data, "bin")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", err
	}
	out := filepath.Join(dir, "caddy-"+commit[:12])
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	build := exec.Command(goTool, "build", "-o", out, "./testdata/caddy")
	build.Dir = filepath.Join(src, "caddytest")
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	if msg, err := build.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("go build of the previous release %s: %v\n%s", commit, err, msg)
	}
	t.Logf("built the previous release %s in %v (git archive and go build, warm caches)", commit[:12], time.Since(start).Round(time.Millisecond))
	return out, "", nil
}
