package caddytest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func TestAdminListAndGet(t *testing.T) {
	room := uniqueRoom(t)
	startLive(t, room, "capacity 2")
	for i := 0; i < 5; i++ {
		newVisitor(t).place("/")
	}
	code, body := admin(t, http.MethodGet, "/waiting_room/", "")
	if code != http.StatusOK {
		t.Fatalf("list: %d %s", code, body)
	}
	var list []roomObject
	if err := json.Unmarshal([]byte(body), &list); err != nil || len(list) != 1 {
		t.Fatalf("list: %v %s", err, body)
	}
	info := list[0]
	if info.Name != room || info.Mode != "fifo" || info.Capacity != 2 || info.Active != 2 || info.Waiting != 3 ||
		info.AdmittedTotal != 2 || info.Store != "memory" || info.Configured.Capacity != 2 {
		t.Fatalf("room info %+v", info)
	}
	// The list has every field of the contract, with null where there is no value yet.
	for _, field := range []string{`"rate":null`, `"eta_seconds":null`, `"admitted_total":2`} {
		if !strings.Contains(body, field) {
			t.Errorf("list lacks %s: %s", field, body)
		}
	}
	if got := roomInfo(t, room); got.Waiting != 3 {
		t.Fatalf("GET room: %+v", got)
	}
}

// Raising capacity at runtime admits waiters at once; null restores the configured
// value; bad input changes nothing.
func TestAdminPatchCapacity(t *testing.T) {
	room := uniqueRoom(t)
	startLive(t, room, "capacity 1")
	newVisitor(t).place("/")
	first, second := newVisitor(t), newVisitor(t)
	first.place("/")
	second.place("/")

	code, body := admin(t, http.MethodPatch, "/waiting_room/"+room, `{"capacity": 2}`)
	if code != http.StatusOK {
		t.Fatalf("PATCH: %d %s", code, body)
	}
	var info roomObject
	_ = json.Unmarshal([]byte(body), &info)
	if info.Capacity != 2 || info.Configured.Capacity != 1 || info.Overrides.Capacity == nil || info.Active != 2 {
		t.Fatalf("after PATCH: %+v", info)
	}
	if _, admitted := first.place("/"); !admitted {
		t.Fatal("the head waiter was not admitted when capacity rose")
	}
	if q, admitted := second.place("/"); admitted || q.Position != 1 || q.Capacity != 2 {
		t.Fatalf("second waiter: %+v admitted=%v", q, admitted)
	}

	for _, bad := range []struct{ body, reason string }{
		{`{"capacity": -3}`, "greater than 0"},
		{`{"capacity": 0}`, "greater than 0"},
		{`{"capacity": "many"}`, "whole number"},
		{`{"capacity": 5, "colour": "red"}`, "unknown field"},
		{`{"capacity": `, "malformed JSON"},
		{`[1,2]`, "malformed JSON"},
		{`{"capacity": 3} {"capacity": 4}`, "more than one value"},
	} {
		code, body := admin(t, http.MethodPatch, "/waiting_room/"+room, bad.body)
		if code != http.StatusBadRequest || !strings.Contains(body, `"error"`) || !strings.Contains(body, bad.reason) {
			t.Errorf("PATCH %s: %d %s, want 400 mentioning %q", bad.body, code, body, bad.reason)
		}
	}
	if got := roomInfo(t, room); got.Capacity != 2 {
		t.Fatalf("a rejected PATCH changed the capacity to %d", got.Capacity)
	}

	code, body = admin(t, http.MethodPatch, "/waiting_room/"+room, `{"capacity": null}`)
	if code != http.StatusOK {
		t.Fatalf("PATCH null: %d %s", code, body)
	}
	if got := roomInfo(t, room); got.Capacity != 1 || got.Overrides.Capacity != nil {
		t.Fatalf("after PATCH null: %+v", got)
	}
}

func TestAdminAdmitRemoveReset(t *testing.T) {
	room := uniqueRoom(t)
	startLive(t, room, "capacity 1")
	holder := newVisitor(t)
	holder.place("/")
	waiters := make([]*visitor, 4)
	for i := range waiters {
		waiters[i] = newVisitor(t)
		waiters[i].place("/")
	}

	code, body := admin(t, http.MethodPost, "/waiting_room/"+room+"/admit", `{"count": 2}`)
	if code != http.StatusOK || !strings.Contains(body, `"admitted":2`) {
		t.Fatalf("admit: %d %s", code, body)
	}
	for i, v := range waiters[:2] {
		if _, admitted := v.place("/"); !admitted {
			t.Fatalf("waiter %d not admitted by the admin", i+1)
		}
	}
	if got := roomInfo(t, room); got.Active != 3 || got.Waiting != 2 {
		t.Fatalf("after admit 2 beyond capacity 1: %+v", got)
	}

	// Remove the third waiter: the fourth moves up.
	id := waiters[2].visitorID(t)
	if code, body := admin(t, http.MethodDelete, "/waiting_room/"+room+"/visitors/"+id, ""); code != http.StatusOK {
		t.Fatalf("remove: %d %s", code, body)
	}
	if q, _ := waiters[3].place("/"); q.Position != 1 {
		t.Fatalf("after removing the waiter ahead, position %d", q.Position)
	}
	if code, _ := admin(t, http.MethodDelete, "/waiting_room/"+room+"/visitors/"+id, ""); code != http.StatusNotFound {
		t.Fatalf("removing a removed visitor: %d, want 404", code)
	}
	// Removing an admitted visitor ends its session on this instance at once.
	if code, body := admin(t, http.MethodDelete, "/waiting_room/"+room+"/visitors/"+holder.visitorID(t), ""); code != http.StatusOK {
		t.Fatalf("remove admitted: %d %s", code, body)
	}
	if _, admitted := holder.place("/"); admitted {
		t.Fatal("a removed visitor still got in")
	}

	if code, body := admin(t, http.MethodPost, "/waiting_room/"+room+"/reset", ""); code != http.StatusOK {
		t.Fatalf("reset: %d %s", code, body)
	}
	if got := roomInfo(t, room); got.Active != 0 || got.Waiting != 0 {
		t.Fatalf("after reset: %+v", got)
	}
}

func TestAdminErrors(t *testing.T) {
	room := uniqueRoom(t)
	startLive(t, room, "capacity 1")
	tests := []struct {
		method, path, body string
		code               int
		reason             string
	}{
		{"GET", "/waiting_room/nosuchroom", "", 404, "no room"},
		{"PATCH", "/waiting_room/nosuchroom", `{"capacity":1}`, 404, "no room"},
		{"POST", "/waiting_room/nosuchroom/admit", `{"count":1}`, 404, "no room"},
		{"GET", "/waiting_room/" + room + "/nosuch", "", 404, "no such"},
		{"DELETE", "/waiting_room/", "", 405, "not allowed"},
		{"POST", "/waiting_room/" + room, "", 405, "not allowed"},
		{"GET", "/waiting_room/" + room + "/admit", "", 405, "not allowed"},
		{"GET", "/waiting_room/" + room + "/reset", "", 405, "not allowed"},
		{"GET", "/waiting_room/" + room + "/visitors/00000000000000000000000000000000", "", 405, "not allowed"},
		{"POST", "/waiting_room/" + room + "/admit", `{"count": -1}`, 400, "greater than 0"},
		{"POST", "/waiting_room/" + room + "/admit", `{}`, 400, "count"},
		{"POST", "/waiting_room/" + room + "/admit", `{"count": 1, "now": true}`, 400, "unknown field"},
		{"POST", "/waiting_room/" + room + "/admit", `not json`, 400, "malformed"},
		{"DELETE", "/waiting_room/" + room + "/visitors/not-an-id", "", 400, "32 hex"},
		{"DELETE", "/waiting_room/" + room + "/visitors/00000000000000000000000000000000", "", 404, "no such visitor"},
	}
	for _, tt := range tests {
		code, body := admin(t, tt.method, tt.path, tt.body)
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal([]byte(body), &e)
		if code != tt.code || !strings.Contains(e.Error, tt.reason) {
			t.Errorf("%s %s %s: %d %s, want %d with an error mentioning %q", tt.method, tt.path, tt.body, code, body, tt.code, tt.reason)
		}
	}
}

func TestMetricsAcrossReload(t *testing.T) {
	room := uniqueRoom(t)
	// away_ttl 0: a silent waiter's place is gone at queue_ttl, and counted abandoned.
	startLive(t, room, "capacity 2\n\t\tqueue_ttl 5s\n\t\taway_ttl 0")
	holder := newVisitor(t)
	holder.place("/")
	newVisitor(t).place("/")
	for i := 0; i < 3; i++ {
		newVisitor(t).place("/") // queued, then silent: abandoned after queue_ttl
	}
	eventually(t, "gauges to show 2 active, 3 waiting", func() (bool, string) {
		a, w := metricValue(t, "caddy_waiting_room_active", room), metricValue(t, "caddy_waiting_room_waiting", room)
		return a == 2 && w == 3, fmt.Sprintf("active %v, waiting %v", a, w)
	})
	if v := metricValue(t, "caddy_waiting_room_capacity", room); v != 2 {
		t.Fatalf("capacity gauge %v", v)
	}
	if a, q := metricValue(t, "caddy_waiting_room_admitted_total", room), metricValue(t, "caddy_waiting_room_queued_total", room); a != 2 || q != 3 {
		t.Fatalf("admitted_total %v, queued_total %v; want 2, 3", a, q)
	}
	eventually(t, "three silent waiters counted as abandoned", func() (bool, string) {
		v := metricValue(t, "caddy_waiting_room_abandoned_total", room)
		return v == 3, fmt.Sprint(v)
	})

	// A waiter who is admitted after waiting is observed in wait_seconds.
	waiter := newVisitor(t)
	waiter.place("/")
	ws := waiter.socket("/")
	next(t, ws)
	holder.get("/checkout", "")
	until(t, ws, "admitted", func(m queueAnswer) bool { return m.Type == "admitted" })
	if _, admitted := waiter.place("/"); !admitted {
		t.Fatal("waiter not admitted after the revoke")
	}
	if n := metricValue(t, "caddy_waiting_room_wait_seconds_count", room); n != 1 {
		t.Fatalf("wait_seconds observed %v times, want 1", n)
	}

	// After a reload the same series carry on: registered again, not reset, no panic.
	startLive(t, room, "capacity 3\n\t\tqueue_ttl 5s")
	eventually(t, "capacity gauge to follow the reload", func() (bool, string) {
		v := metricValue(t, "caddy_waiting_room_capacity", room)
		return v == 3, fmt.Sprint(v)
	})
	if a := metricValue(t, "caddy_waiting_room_admitted_total", room); a != 3 {
		t.Fatalf("admitted_total after reload %v, want 3", a)
	}
	if v := metricValue(t, "caddy_waiting_room_active", room); v != 2 {
		t.Fatalf("active after reload %v, want 2", v)
	}
}

// A path that is not clean names no resource of the API, and the room never acts on
// it. Caddy's admin endpoint answers a raw one (//, . or .. segments) itself before
// any module sees it: a 307 to the clean path, as for each of its own paths, and
// nothing done (a client that follows redirects then asks for the clean path). One
// that reaches the room, its dots escaped, is a JSON 404 (docs/admin-api.md).
func TestAdminUncleanPathsDoNothing(t *testing.T) {
	room := uniqueRoom(t)
	startLive(t, room, "capacity 1")
	newVisitor(t).place("/")
	newVisitor(t).place("/")
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	ask := func(method, p string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, adminBase+p, strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, c := range []struct{ method, path, clean string }{
		{http.MethodGet, "/waiting_room/..", "/"},
		{http.MethodGet, "/waiting_room//" + room, "/waiting_room/" + room},
		{http.MethodGet, "/waiting_room/./" + room, "/waiting_room/" + room},
		{http.MethodPost, "/waiting_room//" + room + "/reset", "/waiting_room/" + room + "/reset"},
		{http.MethodPost, "/waiting_room/" + room + "/admit/../reset", "/waiting_room/" + room + "/reset"},
	} {
		resp := ask(c.method, c.path)
		if resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("Location") != c.clean {
			t.Errorf("%s %s: %d to %q, want Caddy's 307 to %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Location"), c.clean)
		}
	}
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/waiting_room/%2e%2e"},
		{http.MethodGet, "/waiting_room/%2E/" + room},
		{http.MethodPost, "/waiting_room/" + room + "/admit/%2e%2e/reset"},
	} {
		resp := ask(c.method, c.path)
		if resp.StatusCode != http.StatusNotFound || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Errorf("%s %s: %d %q to %q, want a JSON 404", c.method, c.path, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Location"))
		}
	}
	if info := roomInfo(t, room); info.Active != 1 || info.Waiting != 1 {
		t.Fatalf("after the unclean paths, the room is %+v, want as it was", info)
	}
}
