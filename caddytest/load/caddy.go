package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// An instance is one Caddy process of the run, with its admin endpoint on a port of its
// own and each of its sites on another.
type instance struct {
	*proc
	admin string         // http://127.0.0.1:<admin port>
	ports map[string]int // site name → port
	over  transport      // how its sites are served
}

// url is the base URL of the instance's site named site.
func (in *instance) url(site string) string {
	return fmt.Sprintf("%s://127.0.0.1:%d", in.over.scheme(), in.ports[site])
}

// A caddyConfig says what a new instance serves: sites maps a site's name to its
// Caddyfile block body (the part inside the braces), written for the port the rig
// picks. Every instance also answers /healthz on every site, outside any room.
type caddyConfig map[string]string

// startCaddy starts an instance serving cfg over plain HTTP and waits until every site
// answers.
func (r *rig) startCaddy(name string, cfg caddyConfig) (*instance, error) {
	return r.startCaddyOver(name, cfg, plainHTTP)
}

// startCaddyOver is startCaddy over the transport t (see tls.go).
func (r *rig) startCaddyOver(name string, cfg caddyConfig, t transport) (*instance, error) {
	in := &instance{ports: map[string]int{}, over: t}
	adminPort, err := r.freePort()
	if err != nil {
		return nil, err
	}
	in.admin = fmt.Sprintf("http://127.0.0.1:%d", adminPort)
	https := "\tauto_https off\n"
	if t.secure {
		if https, err = r.tlsGlobals(); err != nil {
			return nil, err
		}
	}
	text := fmt.Sprintf(`{
	admin 127.0.0.1:%d
	default_bind 127.0.0.1
%s	persist_config off
	grace_period 1ns
	log {
		level ERROR
	}
}
`, adminPort, https)
	for site, body := range cfg {
		port, err := r.freePort()
		if err != nil {
			return nil, err
		}
		in.ports[site] = port
		text += fmt.Sprintf("\n%s://127.0.0.1:%d {\n\thandle /healthz {\n\t\trespond \"ok\"\n\t}\n%s\n}\n", t.scheme(), port, body)
	}
	dir := filepath.Join(r.dir, name)
	for _, d := range []string{"data", "config"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	file := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		return nil, err
	}
	env := []string{
		"XDG_DATA_HOME=" + filepath.Join(dir, "data"),
		"XDG_CONFIG_HOME=" + filepath.Join(dir, "config"),
		"HOME=" + dir,
		// Caddy's default; named so that a GOMAXPROCS in the caller's shell cannot skew
		// one instance against the baseline.
		"GOMAXPROCS=",
	}
	p, err := r.start(name, env, r.caddy, "run", "--config", file, "--adapter", "caddyfile")
	if err != nil {
		return nil, err
	}
	in.proc = p
	if t.secure {
		if err := r.trustLocalCA(p); err != nil {
			return nil, err
		}
	}
	for site := range cfg {
		if err := waitHTTP(r.ctx, p, in.url(site)+"/healthz"); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// profileBeside starts a profile of in (as profile) while the caller goes on, and
// returns what waits for it to end, with its error.
func (r *rig) profileBeside(in *instance, kind string, d time.Duration, file string) (wait func() error) {
	done := make(chan error, 1)
	go func() { done <- r.profile(in, kind, d, file) }()
	return func() error { return <-done }
}

// profile saves one of the instance's pprof profiles (Caddy's admin endpoint serves
// /debug/pprof/) into the run's -profiles folder; it does nothing without that flag.
// For "profile" (CPU) it samples for d, so call it while the load runs.
func (r *rig) profile(in *instance, kind string, d time.Duration, file string) error {
	if r.o.profiles == "" {
		return nil
	}
	url := in.admin + "/debug/pprof/" + kind
	if kind == "profile" {
		url += fmt.Sprintf("?seconds=%d", max(1, int(d/time.Second)))
	}
	req, err := http.NewRequestWithContext(r.ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	if err := os.MkdirAll(r.o.profiles, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(r.o.profiles, file))
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
}
