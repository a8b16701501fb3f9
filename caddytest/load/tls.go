package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// With -tls, the http, admitted, key and ws sections run a second time over HTTPS, as Caddy serves by
// default, and their rows print beside the plain ones (pairRows). The TLS instances
// use Caddy's own certificates (local_certs: Caddy's internal CA) and share one
// storage folder, as a fleet does, so one root signs every instance's certificate.
//
// Who trusts what: the harness's own clients (its HTTP requests, the probes and the
// waiters' client processes) trust that root, read from the shared storage, and verify
// every certificate. wrk verifies nothing (it has no option to): its rounds skip
// verification, which costs nothing either way once its connections are up.

// A transport is how a section reaches its instances: plain HTTP or HTTPS.
type transport struct {
	secure bool
}

var (
	plainHTTP = transport{}
	overTLS   = transport{secure: true}
)

// transports are the ones a run measures: plain, and TLS too with -tls.
func (o options) transports() []transport {
	if o.tls {
		return []transport{plainHTTP, overTLS}
	}
	return []transport{plainHTTP}
}

// scheme is the URL scheme of the transport's sites.
func (t transport) scheme() string {
	if t.secure {
		return "https"
	}
	return "http"
}

// label is what a row's figure says of the transport: nothing for plain HTTP.
func (t transport) label() string {
	if t.secure {
		return "TLS"
	}
	return ""
}

// fileSuffix tells a TLS process's name and files from the plain one's.
func fileSuffix(t transport) string {
	if t.secure {
		return "-tls"
	}
	return ""
}

// tlsStorage is the storage folder every TLS instance of the run shares.
func (r *rig) tlsStorage() string { return filepath.Join(r.dir, "tls-storage") }

// tlsGlobals are the global options that make an instance serve its sites over HTTPS
// with Caddy's local CA. HTTP/3 is left out: wrk and the waiters speak HTTP/1.1 (a
// browser's WebSocket does too, on a connection of its own), and a QUIC listener per
// site would only add to the memory measured before the waiters come.
func (r *rig) tlsGlobals() (string, error) {
	httpPort, err := r.freePort()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(`	local_certs
	skip_install_trust
	auto_https disable_redirects
	http_port %d
	storage file_system %s
	servers {
		protocols h1 h2
	}
`, httpPort, r.tlsStorage()), nil
}

// rootFile is where Caddy's local CA keeps its root certificate in the shared storage.
func (r *rig) rootFile() string {
	return filepath.Join(r.tlsStorage(), "pki", "authorities", "local", "root.crt")
}

// siteClient is the harness's HTTP client for the instances' sites: it trusts the
// run's local CA once a TLS instance has made it (trustLocalCA).
var siteClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}

// clientTLS is the TLS configuration of the harness's own connections to the sites,
// trusting the run's local CA; nil until a TLS instance has started.
var clientTLS *tls.Config

// trustedRoot is the root certificate file clientTLS trusts.
var trustedRoot string

// trustLocalCA waits for the local CA's root certificate (the first TLS instance
// writes it as it starts) and has the harness's clients trust it.
func (r *rig) trustLocalCA(p *proc) error {
	if trustedRoot == r.rootFile() {
		return nil // a run's CA, once loaded, is every TLS instance's; a new rig has its own
	}
	deadline := time.Now().Add(startDeadline)
	for {
		cfg, err := loadRoot(r.rootFile())
		if err == nil {
			clientTLS, trustedRoot = cfg, r.rootFile()
			siteClient.Transport.(*http.Transport).TLSClientConfig = cfg.Clone()
			return nil
		}
		if !p.alive() {
			return fmt.Errorf("%s exited at start:\n%s", p.name, p.log())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no root certificate of Caddy's local CA at %s: %v", r.rootFile(), err)
		}
		if err := sleep(r.ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// loadRoot is a client configuration that trusts the root certificate in file, and
// only it.
func loadRoot(file string) (*tls.Config, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("no certificate in " + file)
	}
	// HTTP/1.1 only, as a browser's WebSocket connection is.
	return &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}}, nil
}

// A waiterDialer opens waiters' connections: TCP, and TLS over it when tls is set.
type waiterDialer struct {
	net *net.Dialer
	tls *tls.Config // nil: plain HTTP
}

func (t transport) dialer(d *net.Dialer) *waiterDialer {
	wd := &waiterDialer{net: d}
	if t.secure {
		wd.tls = clientTLS
	}
	return wd
}
