package caddytest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddytest"
)

// askHandoffVia asks for a code for the visitor's place at path, with the
// X-Forwarded-Proto given, and returns the link.
func (v *visitor) askHandoffVia(path, proto string) string {
	v.t.Helper()
	link, _ := v.askHandoffQR(path, proto)
	return link
}

// askHandoffQR is askHandoffVia that also returns the QR code ("" for none).
func (v *visitor) askHandoffQR(path, proto string) (link, qr string) {
	v.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, liveBase+path, nil)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Waiting-Room-Handoff", "new")
	if proto != "" {
		req.Header.Set("X-Forwarded-Proto", proto)
	}
	resp, err := v.client.Do(req)
	if err != nil {
		v.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var a struct {
		URL string `json:"handoff_url"`
		QR  string `json:"handoff_qr"`
	}
	if err := json.Unmarshal(body, &a); err != nil || a.URL == "" {
		v.t.Fatalf("the answer to a request for a code: %d %.200q", resp.StatusCode, body)
	}
	return a.URL, a.QR
}

// A code asked for at an address with an 8 KB query string (Caddy takes it: its
// header limit is 1 MB) gets a link of at most 256 bytes, drawn as a QR code, to the
// same path without the query, and the link moves the place: what a code costs does
// not grow with the address (docs/people-and-devices.md, "Hand-offs against bots").
func TestLiveHandoffLinkAtALongAddress(t *testing.T) {
	startLive(t, uniqueRoom(t), "capacity 1")
	newVisitor(t).place("/")
	waiter := newVisitor(t)
	long := "/drop?q=" + strings.Repeat("x", 8000)
	if q, admitted := waiter.place(long); admitted || q.Position != 1 {
		t.Fatalf("the waiter: admitted %v at %d", admitted, q.Position)
	}
	link, qr := waiter.askHandoffQR(long, "")
	if len(link) > 256 || qr == "" || !strings.HasPrefix(link, liveBase+"/drop?waiting_room_handoff=") {
		t.Fatalf("the link is %d bytes (%.100q), QR code drawn %v; want at most 256 bytes to /drop, drawn", len(link), link, qr != "")
	}
	phone := newVisitor(t)
	if q, admitted := phone.place(strings.TrimPrefix(link, liveBase)); admitted || q.Position != 1 {
		t.Fatalf("the phone that opened the link: admitted %v at %d, want the place at 1", admitted, q.Position)
	}
}

// Behind a TLS-terminating proxy the code's link is https, so that the code (the place
// itself) does not travel in the clear: when the request came from a proxy the
// server's trusted_proxies lists, and it says X-Forwarded-Proto: https. A client that
// is not such a proxy cannot make the link say anything by sending the header itself.
func TestLiveHandoffLinkSchemeFollowsTrustedProxies(t *testing.T) {
	for _, c := range []struct {
		what, servers string
		proto, want   string
	}{
		{"a trusted proxy that says https", "trusted_proxies static 127.0.0.1/32 ::1/128", "https", "https://"},
		{"a trusted proxy that says http", "trusted_proxies static 127.0.0.1/32 ::1/128", "http", "http://"},
		{"a trusted proxy that says nothing", "trusted_proxies static 127.0.0.1/32 ::1/128", "", "http://"},
		{"a forged https from an untrusted address", "trusted_proxies static 10.0.0.0/8", "https", "http://"},
		{"a forged https with no proxy trusted", "", "https", "http://"},
	} {
		t.Run(c.what, func(t *testing.T) {
			servers := ""
			if c.servers != "" {
				servers = "\tservers {\n\t\t" + c.servers + "\n\t}\n"
			}
			caddytest.NewTester(t).InitServer(liveGlobals(servers)+fmt.Sprintf(`
http://localhost:%d {
	waiting_room {
		name %s
		capacity 1
	}
	respond "upstream {path}"
}
`, livePort, uniqueRoom(t)), "caddyfile")
			if t.Failed() {
				t.FailNow()
			}
			newVisitor(t).place("/")
			waiter := newVisitor(t)
			if _, admitted := waiter.place("/drop"); admitted {
				t.Fatal("the second visitor got in with capacity 1")
			}
			if link := waiter.askHandoffVia("/drop", c.proto); !strings.HasPrefix(link, c.want+"localhost:") {
				t.Fatalf("the link is %q, want %s", link, c.want)
			}
		})
	}
}
