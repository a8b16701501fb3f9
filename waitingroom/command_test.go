package waitingroom

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/rehearse/*.golden from the command's current output")

// runCommand runs `caddy args...` with the `caddy waiting-room` commands as Caddy's
// command line registers them, in dir, and returns what it wrote to stdout and
// stderr, and its error.
func runCommand(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	wr, ok := caddycmd.Commands()["waiting-room"]
	if !ok {
		t.Fatal("no waiting-room command registered")
	}
	// The root is Caddy's, as its command factory makes it.
	root := &cobra.Command{Use: "caddy", SilenceUsage: true}
	group := &cobra.Command{Use: wr.Name, Short: wr.Short}
	wr.CobraFunc(group)
	root.AddCommand(group)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	t.Chdir(dir)
	err := root.Execute()
	return out.String(), err
}

// checkGolden compares got with testdata/rehearse/name.golden in the package's
// folder, goldens (-update rewrites it).
func checkGolden(t *testing.T, goldens, name, got string) {
	t.Helper()
	path := filepath.Join(goldens, name+".golden")
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from %s (go test -run %s -update rewrites it):\n--- got\n%s\n--- want\n%s", name, path, t.Name(), got, want)
	}
}

// The site's files the command cases read, written into a folder of their own.
var commandFiles = map[string]string{
	"Caddyfile": `:8080 {
	waiting_room {
		name drop
		capacity 100
		session_ttl 1m
	}
	respond "the shop"
}
`,
	"rooms.Caddyfile": `:8080 {
	@members path /members/*
	waiting_room @members {
		name members
		capacity 50
	}
	waiting_room {
		name drop
		capacity 400
	}
	respond "the shop"
}
:8081 {
	waiting_room {
		name raffle
		capacity 10
		mode random
	}
	respond "the raffle"
}
`,
	"plain.Caddyfile": ":8080 {\n\trespond \"no room here\"\n}\n",
	"zero.json":       `{"apps": {"http": {"servers": {"srv0": {"listen": [":8080"], "routes": [{"handle": [{"handler": "waiting_room", "name": "drop", "capacity": 0}]}]}}}}}`,
	"adapt.Caddyfile": `:8080 {
	waiting_room {
		name drop
		capacity 100
		adapt {
			latency 500ms
		}
	}
	respond "the shop"
}
`,
	"bad.sale": `# a sale with a bad line
arrivals 5000 over 5m
give-up  130% after 5m
`,
	"bad.csv": "minute,arrivals\n0,120\n1,lots\n",
	"file":    "not a folder",
}

// Each case's output is golden: --help, each bad input's error (which names what
// is wrong and where), and a good run's summary.
func TestRehearseCommandGolden(t *testing.T) {
	goldens, err := filepath.Abs(filepath.Join("testdata", "rehearse"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, text := range commandFiles {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	empty := t.TempDir()
	sale := []string{"--arrivals", "3000 over 5m", "--stay", "2m ± 1m"}
	for _, tc := range []struct {
		name string
		dir  string
		args []string
		fail bool
	}{
		{"help", dir, []string{"--help"}, false},
		{"no-config", empty, sale, true},
		{"no-room", dir, append([]string{"--config", "plain.Caddyfile"}, sale...), true},
		{"several-rooms", dir, append([]string{"--config", "rooms.Caddyfile"}, sale...), true},
		{"unknown-room", dir, append([]string{"--config", "rooms.Caddyfile", "--room", "vip"}, sale...), true},
		{"refused-room", dir, append([]string{"--config", "zero.json"}, sale...), true},
		{"no-arrivals", dir, []string{"--stay", "5m"}, true},
		{"negative-arrivals", dir, []string{"--arrivals", "-300 over 5m"}, true},
		{"negative-duration", dir, append(sale, "--stay", "-5m"), true},
		{"share-over-100", dir, append(sale, "--give-up", "130% after 5m"), true},
		{"share-over-1", dir, append(sale, "--no-shows", "2"), true},
		{"negative-share", dir, append(sale, "--checkout", "-10%"), true},
		{"bad-duration", dir, append(sale, "--give-up", "30% after a while"), true},
		{"spread-below-zero", dir, append(sale, "--stay", "2m ± 3m"), true},
		{"sale-file-bad-line", dir, []string{"--sale", "bad.sale"}, true},
		{"sale-file-missing", dir, []string{"--sale", "gone.sale"}, true},
		{"csv-bad-line", dir, []string{"--arrivals-csv", "bad.csv"}, true},
		{"compare-bad-value", dir, append(sale, "--compare", `{"capacity": -4}`), true},
		{"compare-unknown-setting", dir, append(sale, "--compare", `{"capcity": 400}`), true},
		{"compare-not-json", dir, append(sale, "--compare", `capacity=400`), true},
		{"adapt-without-shop", dir, append([]string{"--config", "adapt.Caddyfile"}, sale...), true},
		{"out-not-a-folder", dir, append(sale, "--out", "file/report"), true},
		{"stray-argument", dir, append(sale, "now"), true},
		{"good", dir, append(sale, "--give-up", "20% after 1m", "--compare", `{"capacity": 200}`, "--out", "report"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := runCommand(t, tc.dir, append([]string{"waiting-room", "rehearse"}, tc.args...)...)
			if (err != nil) != tc.fail {
				t.Fatalf("error %v, want one: %v\n%s", err, tc.fail, got)
			}
			checkGolden(t, goldens, tc.name, strings.ReplaceAll(got, tc.dir, "DIR"))
		})
	}
}

// The same seed writes the same report, byte for byte, through the command: the
// room as the site configures it and a compared setting, a sale with give-ups,
// sleeping phones and no-shows. Another seed plays another sale.
func TestRehearseCommandIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Caddyfile"), []byte(commandFiles["Caddyfile"]), 0o644); err != nil {
		t.Fatal(err)
	}
	report := func(seed, out string) (js, page []byte) {
		t.Helper()
		if got, err := runCommand(t, dir, "waiting-room", "rehearse", "--seed", seed, "--out", out,
			"--arrivals", "2000 over 2m, 1000 over 5m", "--stay", "3m ± 1m", "--checkout", "40%", "--give-up", "10% after 2m, 10% after 6m",
			"--sleep", "5% for 2m ± 1m", "--no-shows", "2%", "--compare", `{"capacity": 150}`); err != nil {
			t.Fatalf("%v\n%s", err, got)
		}
		js, err := os.ReadFile(filepath.Join(dir, out, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		page, err = os.ReadFile(filepath.Join(dir, out, "report.html"))
		if err != nil {
			t.Fatal(err)
		}
		return js, page
	}
	js1, page1 := report("7", "first")
	js2, page2 := report("7", "second")
	if !bytes.Equal(js1, js2) || !bytes.Equal(page1, page2) {
		t.Fatalf("seed 7 wrote two different reports: report.json the same: %v, report.html the same: %v", bytes.Equal(js1, js2), bytes.Equal(page1, page2))
	}
	if js3, _ := report("8", "third"); bytes.Equal(js1, js3) {
		t.Fatal("seeds 7 and 8 played the same sale")
	}
}
