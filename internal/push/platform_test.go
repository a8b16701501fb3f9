package push

import (
	"os/exec"
	"testing"
)

// Caddy runs on Windows and the BSDs too, and a user's xcaddy build compiles this
// package for them: its system calls are Linux's and unix's own (writenow_unix.go,
// idle_linux.go), each with a fallback elsewhere. This builds the package for the
// platforms Caddy releases for that have none of the Linux-only files.
func TestBuildsForCaddysOtherPlatforms(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	for _, goos := range []string{"windows", "darwin", "freebsd"} {
		cmd := exec.Command(gobin, "build", "-o", "/dev/null", ".")
		cmd.Env = append(cmd.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("GOOS=%s: %v\n%s", goos, err, out)
		}
	}
}
