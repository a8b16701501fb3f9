package caddytest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The admin API as the tests call it: the in-process Caddy's (on the harness's admin
// port), and one instance's of a fleet (its own port, in node.admin).

const adminBase = "http://localhost:2999"

// admin calls the admin API and returns the status and body.
func admin(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	return adminAt(t, adminBase, method, path, body)
}

// adminAt calls the admin API at base (one fleet instance's, say).
func adminAt(t *testing.T, base, method, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	if body != "" || method == http.MethodPost { // the API takes a POST as JSON only
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func roomInfo(t *testing.T, room string) roomObject {
	t.Helper()
	code, body := admin(t, http.MethodGet, "/waiting_room/"+room, "")
	if code != http.StatusOK {
		t.Fatalf("GET room: %d %s", code, body)
	}
	var info roomObject
	if err := json.Unmarshal([]byte(body), &info); err != nil {
		t.Fatal(err)
	}
	return info
}

// roomObject is the admin API's room object as a client reads it (docs/admin-api.md):
// decoding the JSON, not sharing the server's type, is what pins the public shape.
type roomObject struct {
	Name          string `json:"name"`
	Mode          string `json:"mode"`
	Capacity      int    `json:"capacity"`
	Active        int    `json:"active"`
	Waiting       int    `json:"waiting"`
	Away          int    `json:"away"`
	AdmittedTotal uint64 `json:"admitted_total"`
	Store         string `json:"store"`
	Configured    struct {
		Capacity int    `json:"capacity"`
		Mode     string `json:"mode"`
	} `json:"configured"`
	Overrides roomOverrides `json:"overrides"`
}

type roomOverrides struct {
	Capacity *int `json:"capacity"`
}

// tryRoomInfo reads one room from the admin API, for goroutines other than the test's.
func tryRoomInfo(room string) (roomObject, error) {
	var info roomObject
	resp, err := http.Get(adminBase + "/waiting_room/" + room)
	if err != nil {
		return info, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return info, fmt.Errorf("admin answered %d", resp.StatusCode)
	}
	return info, json.NewDecoder(resp.Body).Decode(&info)
}

// metricValue reads one sample of the admin /metrics endpoint.
func metricValue(t *testing.T, name, room string) float64 {
	t.Helper()
	return metricAt(t, adminBase, name, room)
}

// metricAt reads room's value of the metric name off the admin API at base.
func metricAt(t *testing.T, base, name, room string) float64 {
	t.Helper()
	_, body := adminAt(t, base, http.MethodGet, "/metrics", "")
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\{room="` + regexp.QuoteMeta(room) + `"\} (\S+)$`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no %s for room %s in /metrics", name, room)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// consoleRoom is what the console test reads of the admin API's room object.
type consoleRoom struct {
	Capacity  int             `json:"capacity"`
	Mode      string          `json:"mode"`
	Message   string          `json:"message"`
	Away      *int            `json:"away"`
	NextEvent json.RawMessage `json:"next_event"`
}

func consoleInfo(t *testing.T, room string) (consoleRoom, map[string]any) {
	t.Helper()
	code, body := admin(t, http.MethodGet, "/waiting_room/"+room, "")
	if code != http.StatusOK {
		t.Fatalf("GET room: %d %s", code, body)
	}
	var info consoleRoom
	var raw map[string]any
	if json.Unmarshal([]byte(body), &info) != nil || json.Unmarshal([]byte(body), &raw) != nil {
		t.Fatalf("room object %s", body)
	}
	return info, raw
}

// patchFleetRoom PATCHes room on one instance's admin endpoint.
func patchFleetRoom(t *testing.T, nd *node, room, body string) {
	t.Helper()
	if code, answer := adminAt(t, nd.admin, http.MethodPatch, "/waiting_room/"+room, body); code != http.StatusOK {
		t.Fatalf("PATCH %s on %s: %d %s", body, nd.name, code, answer)
	}
}

// goroutines reads the instance's goroutine count from Caddy's pprof endpoint.
func goroutines(t *testing.T, nd *node) int {
	t.Helper()
	resp, err := http.Get(nd.admin + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatalf("reading goroutines of %s: %v", nd.name, err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	n, perr := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "goroutine profile: total ")))
	if err != nil || perr != nil {
		t.Fatalf("reading goroutines of %s: %q %v %v", nd.name, line, err, perr)
	}
	return n
}
