package caddytest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/token"
)

// The people in the tests, as HTTP and WebSocket clients: a visitor of the in-process
// Caddy, a guest whom a load balancer may send to any instance of a fleet, and what
// both read back (the JSON place, the socket's frames, the proof-of-work challenge).

// visitor is one person with one browser: its own cookie jar.
type visitor struct {
	t      *testing.T
	client *http.Client
}

func newVisitor(t *testing.T) *visitor {
	jar, _ := cookiejar.New(nil)
	return &visitor{t: t, client: &http.Client{Jar: jar, Timeout: 10 * time.Second}}
}

func (v *visitor) get(path, accept string) (int, http.Header, string) {
	v.t.Helper()
	code, hdr, body, err := v.tryGet(path, accept)
	if err != nil {
		v.t.Fatal(err)
	}
	return code, hdr, body
}

// tryGet is get for goroutines other than the test's: it reports errors.
func (v *visitor) tryGet(path, accept string) (int, http.Header, string, error) {
	req, _ := http.NewRequest(http.MethodGet, liveBase+path, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := v.client.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body), err
}

// place is the waiter's JSON answer; admitted is true when the request reached the
// upstream instead.
func (v *visitor) place(path string) (q queueAnswer, admitted bool) {
	v.t.Helper()
	q, admitted, err := v.tryPlace(path)
	if err != nil {
		v.t.Fatal(err)
	}
	return q, admitted
}

// tryPlace is place for goroutines other than the test's: it reports errors.
func (v *visitor) tryPlace(path string) (q queueAnswer, admitted bool, err error) {
	_, _, body, err := v.tryGet(path, "application/json")
	if err != nil {
		return q, false, err
	}
	if strings.HasPrefix(body, "upstream ") || body == "order placed" {
		return q, true, nil
	}
	if err := json.Unmarshal([]byte(body), &q); err != nil || q.Status != "queued" {
		return q, false, fmt.Errorf("not a queued answer: %q", body)
	}
	return q, false, nil
}

type queueAnswer struct {
	Type           string `json:"type"`
	Room           string `json:"room"`
	Status         string `json:"status"`
	Position       int    `json:"position"`
	Waiting        int    `json:"waiting"`
	Active         int    `json:"active"`
	Capacity       int    `json:"capacity"`
	ETASeconds     *int   `json:"eta_seconds"`
	RefreshSeconds int    `json:"refresh_seconds"`
	AwayTTLSeconds int    `json:"away_ttl_seconds"`
	Returned       bool   `json:"returned"`
	Message        string `json:"message"` // the message to the line, in JSON answers
	Text           string `json:"text"`    // a "message" frame's text
	Reason         string `json:"reason"`  // why a visitor let in before is queued anew
}

// socket opens the waiting page's WebSocket with the visitor's cookies.
func (v *visitor) socket(path string) *websocket.Conn {
	v.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := v.trySocket(ctx, path)
	if err != nil {
		v.t.Fatal(err)
	}
	v.t.Cleanup(func() { c.CloseNow() })
	return c
}

// trySocket is socket for goroutines other than the test's: it reports errors, and
// the caller closes the connection.
func (v *visitor) trySocket(ctx context.Context, path string) (*websocket.Conn, error) {
	u, _ := url.Parse(liveBase + path)
	hdr := http.Header{}
	for _, c := range v.client.Jar.Cookies(u) {
		hdr.Add("Cookie", c.Name+"="+c.Value)
	}
	hdr.Set("Origin", liveBase)
	c, resp, err := websocket.Dial(ctx, "ws://localhost:9080"+path, &websocket.DialOptions{
		Subprotocols: []string{"waiting-room.v1"},
		HTTPHeader:   hdr,
	})
	if err != nil {
		return nil, fmt.Errorf("websocket: %v (%v)", err, resp)
	}
	if c.Subprotocol() != "waiting-room.v1" {
		c.CloseNow()
		return nil, fmt.Errorf("subprotocol %q", c.Subprotocol())
	}
	return c, nil
}

// next reads the next message, failing after a generous deadline (a liveness bound,
// not a timing assertion).
func next(t *testing.T, c *websocket.Conn) queueAnswer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, data, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("reading websocket: %v", err)
	}
	var m queueAnswer
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("bad message %q", data)
	}
	return m
}

// until reads messages until one satisfies ok.
func until(t *testing.T, c *websocket.Conn, what string, ok func(queueAnswer) bool) queueAnswer {
	t.Helper()
	for i := 0; i < 100; i++ {
		if m := next(t, c); ok(m) {
			return m
		}
	}
	t.Fatalf("no %s in 100 messages", what)
	return queueAnswer{}
}

// visitorID reads the visitor id out of a visitor's room cookie (version, state, then
// the 16-byte id), as an operator would take it from a log line.
func (v *visitor) visitorID(t *testing.T) string {
	t.Helper()
	u, _ := url.Parse(liveBase)
	for _, c := range v.client.Jar.Cookies(u) {
		if strings.HasPrefix(c.Name, "waiting_room_") {
			raw, err := base64.RawURLEncoding.DecodeString(c.Value)
			if err == nil && len(raw) > 18 {
				var id queue.VisitorID
				copy(id[:], cookieIDBytes(raw))
				return id.String()
			}
		}
	}
	t.Fatal("visitor has no room cookie")
	return ""
}

// leave gives up v's place the way the page's "leave" button does.
func (v *visitor) leave() {
	v.t.Helper()
	c := v.socket("/")
	next(v.t, c)
	if err := c.Write(context.Background(), websocket.MessageText, []byte(`{"type":"leave"}`)); err != nil {
		v.t.Fatal(err)
	}
	c.Close(websocket.StatusNormalClosure, "")
}

// short is the start of a body, enough to tell the waiting page from the upstream.
func short(body string) string {
	if len(body) > 60 {
		return body[:60] + "…"
	}
	return body
}

// fleetTransport is shared by every guest: connections are pooled per instance, cookies
// are per guest.
var fleetTransport = &http.Transport{
	MaxIdleConns:        2000,
	MaxIdleConnsPerHost: 1000,
	IdleConnTimeout:     30 * time.Second,
}

// guest is one person with one browser (one cookie jar) who may be sent to any
// instance by a load balancer. A cookie jar ignores ports, so the cookie one instance
// sets goes with the next request to another, as it would behind one host name.
type guest struct {
	client *http.Client
}

func newGuest() *guest {
	jar, _ := cookiejar.New(nil)
	return &guest{client: &http.Client{Jar: jar, Transport: fleetTransport, Timeout: eventDeadline}}
}

func (g *guest) get(base, path, accept string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		return 0, "", err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// place asks for path as an API client: the queued answer, or admitted when the
// request reached the upstream.
func (g *guest) place(base, path string) (q queueAnswer, admitted bool, err error) {
	code, body, err := g.get(base, path, "application/json")
	if err != nil {
		return q, false, err
	}
	if strings.HasPrefix(body, "upstream ") || body == "done" {
		return q, true, nil
	}
	if err := json.Unmarshal([]byte(body), &q); err != nil || q.Status != "queued" {
		return q, false, fmt.Errorf("%s%s: not a queued answer: %d %q", base, path, code, body)
	}
	return q, false, nil
}

// cookie is the guest's cookie of the named room, "" if none.
func (g *guest) cookie(base, room string) string {
	u, _ := url.Parse(base + "/")
	for _, c := range g.client.Jar.Cookies(u) {
		if c.Name == "waiting_room_"+room {
			return c.Value
		}
	}
	return ""
}

// visitorID reads the visitor id out of the room's cookie. The cookie is signed, not
// encrypted, and its layout is fixed (version, state, [flags in version 2,] 16-byte
// id, ...: see internal/token/token.go); the tests use the id only to follow a visitor
// through the store's own record (the admissions it publishes).
func (g *guest) visitorID(base, room string) (string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(g.cookie(base, room))
	if err != nil || len(raw) < 19 {
		return "", fmt.Errorf("no readable cookie of room %s (%v)", room, err)
	}
	return string(cookieIDBytes(raw)), nil
}

// cookieIDBytes is the visitor id in a decoded room cookie of either version.
func cookieIDBytes(raw []byte) []byte {
	if raw[0] == 1 {
		return raw[2:18]
	}
	return raw[3:19]
}

// dialSocket dials the waiting page's WebSocket at base+path (u), as the page would:
// same origin as the instance it talks to, the room's subprotocol, the guest's
// cookies.
func (g *guest) dialSocket(ctx context.Context, base, path string) (c *websocket.Conn, resp *http.Response, u *url.URL, err error) {
	u, _ = url.Parse(base + path)
	hdr := http.Header{}
	for _, c := range g.client.Jar.Cookies(u) {
		hdr.Add("Cookie", c.Name+"="+c.Value)
	}
	hdr.Set("Origin", base)
	ctx, cancel := context.WithTimeout(ctx, eventDeadline)
	defer cancel()
	c, resp, err = websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+path, &websocket.DialOptions{
		Subprotocols: []string{"waiting-room.v1"},
		HTTPHeader:   hdr,
		HTTPClient:   &http.Client{Transport: fleetTransport},
	})
	return c, resp, u, err
}

// socket opens the waiting page's WebSocket at base+path (dialSocket).
func (g *guest) socket(ctx context.Context, base, path string) (*websocket.Conn, error) {
	c, resp, u, err := g.dialSocket(ctx, base, path)
	if err != nil && resp != nil {
		return nil, fmt.Errorf("websocket to %s: %v (%v): %w", u, err, resp, refusedUpgrade(resp.StatusCode))
	}
	if err != nil {
		return nil, fmt.Errorf("websocket to %s: %v", u, err)
	}
	if c.Subprotocol() != "waiting-room.v1" {
		c.CloseNow()
		return nil, fmt.Errorf("websocket subprotocol %q", c.Subprotocol())
	}
	return c, nil
}

// refusedUpgrade is the status a WebSocket upgrade was answered with instead of 101.
type refusedUpgrade int

func (r refusedUpgrade) Error() string { return fmt.Sprintf("upgrade answered %d", int(r)) }

// readMessage reads the next server message, bounded by the liveness deadline.
func readMessage(ctx context.Context, c *websocket.Conn) (queueAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, eventDeadline)
	defer cancel()
	_, data, err := c.Read(ctx)
	if err != nil {
		return queueAnswer{}, err
	}
	var m queueAnswer
	if err := json.Unmarshal(data, &m); err != nil {
		return queueAnswer{}, fmt.Errorf("bad message %q", data)
	}
	return m, nil
}

// awaitAdmitted reads positions until the server says admitted.
func awaitAdmitted(ctx context.Context, c *websocket.Conn) error {
	for {
		m, err := readMessage(ctx, c)
		if err != nil {
			return fmt.Errorf("waiting for admitted: %w", err)
		}
		if m.Type == "admitted" {
			return nil
		}
		if m.Type != "position" && m.Type != "message" {
			return fmt.Errorf("unexpected message %+v", m)
		}
	}
}

// isUnavailable reports whether a JSON answer is the room's "temporarily unavailable".
func isUnavailable(body string) bool {
	var v struct{ Status string }
	return json.Unmarshal([]byte(body), &v) == nil && v.Status == "unavailable"
}

// challengeAnswer is the room's JSON answer to a new visitor without a valid proof.
type challengeAnswer struct {
	Room       string `json:"room"`
	Status     string `json:"status"`
	Challenge  string `json:"challenge"`
	Difficulty int    `json:"difficulty"`
}

// solveChallenge finds a nonce as the page does: counting until the SHA-256 of
// "<challenge>:<nonce>" starts with difficulty zero bits.
func solveChallenge(t testing.TB, c challengeAnswer) string {
	t.Helper()
	for n := 0; n < 1<<26; n++ {
		proof := c.Challenge + ":" + strconv.Itoa(n)
		if sum := sha256.Sum256([]byte(proof)); token.LeadingZeroBits(sum[:]) >= c.Difficulty {
			return proof
		}
	}
	t.Fatalf("no nonce for %+v", c)
	return ""
}

// askWithProof sends one request as a new API client, with proof in the Waiting-Room-Proof
// header when not empty: admitted (the upstream answered), queued, or challenged.
func askWithProof(base, path, proof string) (status string, c challengeAnswer, err error) {
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	req.Header.Set("Accept", "application/json")
	if proof != "" {
		req.Header.Set("Waiting-Room-Proof", proof)
	}
	g := newGuest()
	resp, err := g.client.Do(req)
	if err != nil {
		return "", c, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", c, err
	}
	body := string(raw)
	if strings.HasPrefix(body, "upstream ") {
		return "admitted", c, nil
	}
	var answer struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		return "", c, fmt.Errorf("%s%s: %d %q", base, path, resp.StatusCode, body)
	}
	if answer.Status == "challenge" {
		err = json.Unmarshal(raw, &c)
	}
	return answer.Status, c, err
}
