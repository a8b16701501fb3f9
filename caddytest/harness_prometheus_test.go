package caddytest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A real Prometheus (Debian's) scraping a fleet's admin endpoints, so the Grafana
// dashboard's queries are checked against the server that will run them.

// prometheusPath finds Debian's prometheus, or skips loudly (fails under CI).
func prometheusPath(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"prometheus", "/usr/bin/prometheus"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	msg := "prometheus not found: SKIPPING the Grafana dashboard's check against a real Prometheus " +
		"(apt-get install prometheus, or run .ci/run)"
	missingTool(t, msg)
	return ""
}

// startPrometheus runs prometheus on a free loopback port, scraping targets (host:port
// of Caddy admin endpoints) every second, and returns its base URL.
func startPrometheus(t *testing.T, targets []string) string {
	t.Helper()
	bin := prometheusPath(t)
	dir := t.TempDir()
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = strconv.Quote(tg)
	}
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: caddy
    static_configs:
      - targets: [%s]
`, strings.Join(quoted, ", "))
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	logPath := filepath.Join(dir, "prometheus.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting prometheus: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); logFile.Close(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	base := "http://" + addr
	waitFor(t, "prometheus to be ready", func() bool {
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			t.Fatalf("prometheus exited:\n%s", tail(string(log), 3000))
		default:
		}
		resp, err := http.Get(base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return base
}

// promQuery evaluates expr now through Prometheus's HTTP API and returns each series'
// value, keyed by its labels.
func promQuery(base, expr string) (map[string]float64, error) {
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("%d %s", resp.StatusCode, body)
	}
	if out.Status != "success" {
		return nil, fmt.Errorf("prometheus: %s", out.Error)
	}
	if out.Data.ResultType != "vector" {
		return nil, fmt.Errorf("result type %s, want vector", out.Data.ResultType)
	}
	values := map[string]float64{}
	for _, r := range out.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("value %v: %v", r.Value[1], err)
		}
		values[fmt.Sprint(r.Metric)] = v
	}
	return values, nil
}
