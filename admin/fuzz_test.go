package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-waitingroom/caddy-waitingroom/waitingroom"
)

// The admin API's fuzz targets. Requests go through the module's handler with
// httptest, and its error is turned into a response the way Caddy's admin server does
// it (caddy's adminHandler.handleError): a caddy.APIError gives its status and
// {"error": message}, any other error a 500.

// fuzzRoom is a running room of capacity 1, with its handler so a test can queue
// visitors.
type fuzzRoom struct {
	name string
	h    *waitingroom.Handler
}

func newFuzzRoom(t testing.TB) *fuzzRoom {
	t.Helper()
	h := &waitingroom.Handler{
		Name:     "admin-fuzz-" + queue.NewVisitorID().String()[:8],
		Capacity: 1,
		// Nobody is dropped while a fuzz run lasts.
		SessionTTL: caddy.Duration(time.Hour),
		QueueTTL:   caddy.Duration(time.Hour),
		StoreRaw:   inMemory,
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	if err := h.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = h.Cleanup()
	})
	return &fuzzRoom{name: h.Name, h: h}
}

// join sends one new visitor through the room.
func (fr *fuzzRoom) join() {
	r := httptest.NewRequest(http.MethodGet, "http://shop.example/", nil)
	r.Header.Set("Accept", "application/json")
	next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })
	_ = fr.h.ServeHTTP(httptest.NewRecorder(), r, next)
}

func (fr *fuzzRoom) info(t *testing.T) roomObject {
	t.Helper()
	room, ok := waitingroom.LookupRoom(fr.name)
	if !ok {
		t.Fatalf("room %q is not running", fr.name)
	}
	doc, err := room.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var info roomObject
	if b, err := json.Marshal(doc); err != nil || json.Unmarshal(b, &info) != nil {
		t.Fatalf("room object %v does not read back: %v", doc, err)
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
	AdmittedTotal uint64 `json:"admitted_total"`
	Store         string `json:"store"`
	Configured    struct {
		Capacity int `json:"capacity"`
	} `json:"configured"`
	Overrides roomOverrides `json:"overrides"`
}

type roomOverrides struct {
	Capacity *int `json:"capacity"`
}

// call makes one admin request, as JSON, and returns the status, content type and body a client
// would see.
func call(t *testing.T, method, path string, body []byte) (int, string, []byte) {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "http://localhost:2019/", bytes.NewReader(body))
	r.Method, r.URL.Path = method, path
	r.Header.Set("Content-Type", "application/json") // as every client of the API sends it
	w := httptest.NewRecorder()
	err := adminRoutes.ServeHTTP(w, r)
	if err == nil {
		return w.Code, w.Header().Get("Content-Type"), w.Body.Bytes()
	}
	apiErr, ok := err.(caddy.APIError) // not errors.As: Caddy does not unwrap either
	if !ok || apiErr.HTTPStatus == 0 {
		t.Fatalf("%s %s %q: %v is not a caddy.APIError with a status; Caddy answers 500", method, path, body, err)
	}
	if apiErr.Err == nil || apiErr.Err.Error() == "" {
		t.Fatalf("%s %s %q: status %d without a message", method, path, body, apiErr.HTTPStatus)
	}
	if w.Body.Len() > 0 {
		t.Fatalf("%s %s %q: wrote %q before failing; Caddy would append its error to it", method, path, body, w.Body.String())
	}
	out, _ := json.Marshal(map[string]string{"error": apiErr.Err.Error()})
	return apiErr.HTTPStatus, "application/json", out
}

// checkAnswer fails unless code is one of want and the body is JSON (the dashboard
// page aside).
func checkAnswer(t *testing.T, what string, code int, contentType string, body []byte, want ...int) {
	t.Helper()
	if !slices.Contains(want, code) {
		t.Fatalf("%s: status %d (want one of %v): %s", what, code, want, body)
	}
	if contentType == "text/html; charset=utf-8" && strings.HasSuffix(what, "/waiting_room/dashboard") {
		return
	}
	if contentType != "application/json" || !json.Valid(body) {
		t.Fatalf("%s: %d with a %q body that is not JSON: %.200q", what, code, contentType, body)
	}
}

func FuzzAdminPatch(f *testing.F) {
	for _, s := range []string{
		`{"capacity": 20}`, `{"capacity": null}`, `{}`, `{"capacity": 0}`, `{"capacity": -1}`,
		`{"capacity": "5"}`, `{"capacity": 1e3}`, `{"capacity": 99999999999999999999}`, `{"colour": 1}`,
		`{"capacity": 2, "colour": 1}`, `[]`, `null`, `{"capacity": 3} {}`, ``, `{`,
	} {
		f.Add([]byte(s))
	}
	fr := newFuzzRoom(f)
	path := "/waiting_room/" + fr.name
	f.Fuzz(func(t *testing.T, body []byte) {
		before := fr.info(t)
		code, ct, out := call(t, http.MethodPatch, path, body)
		checkAnswer(t, "PATCH "+string(body), code, ct, out,
			http.StatusOK, http.StatusBadRequest, http.StatusRequestEntityTooLarge)
		after := fr.info(t)
		if code != http.StatusOK {
			if after.Capacity != before.Capacity || !sameOverride(after.Overrides, before.Overrides) {
				t.Fatalf("PATCH %q answered %d but changed capacity %d -> %d", body, code, before.Capacity, after.Capacity)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("PATCH accepted %q, which is not JSON", body)
		}
		var info roomObject
		if err := json.Unmarshal(out, &info); err != nil || info.Capacity != after.Capacity || info.Capacity <= 0 {
			t.Fatalf("PATCH %q answered %s; the room now has capacity %d", body, out, after.Capacity)
		}
	})
}

func sameOverride(a, b roomOverrides) bool {
	return (a.Capacity == nil) == (b.Capacity == nil) && (a.Capacity == nil || *a.Capacity == *b.Capacity)
}

func FuzzAdminAdmit(f *testing.F) {
	for _, s := range []string{
		`{"count": 1}`, `{"count": 2}`, `{"count": 0}`, `{"count": -3}`, `{"count": null}`, `{}`,
		`{"count": "1"}`, `{"count": 1.5}`, `{"count": 1, "extra": true}`, `{"Count": 1}`,
		`{"count": 1} {"count": 1}`, `[]`, `null`, ``, `{"count": 9223372036854775807}`,
	} {
		f.Add([]byte(s))
	}
	fr := newFuzzRoom(f)
	path := "/waiting_room/" + fr.name + "/admit"
	f.Fuzz(func(t *testing.T, body []byte) {
		for fr.info(t).Waiting < 3 {
			fr.join()
		}
		before := fr.info(t)
		code, ct, out := call(t, http.MethodPost, path, body)
		checkAnswer(t, "POST admit "+string(body), code, ct, out,
			http.StatusOK, http.StatusBadRequest, http.StatusRequestEntityTooLarge)
		after := fr.info(t)
		if code != http.StatusOK {
			if after.Active != before.Active || after.Waiting != before.Waiting {
				t.Fatalf("admit %q answered %d but moved waiters: %d/%d -> %d/%d active/waiting",
					body, code, before.Active, before.Waiting, after.Active, after.Waiting)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("admit accepted %q, which is not JSON", body)
		}
		var res struct{ Admitted *int }
		if err := json.Unmarshal(out, &res); err != nil || res.Admitted == nil ||
			*res.Admitted != before.Waiting-after.Waiting || after.Active-before.Active != *res.Admitted {
			t.Fatalf("admit %q answered %s; active/waiting went %d/%d -> %d/%d",
				body, out, before.Active, before.Waiting, after.Active, after.Waiting)
		}
	})
}

// Any method on any path under /waiting_room: a known status with a JSON error, never
// a 500 (the memory store cannot be down, so never a 503 either).
func FuzzAdminRequest(f *testing.F) {
	for _, s := range []struct{ method, path, body string }{
		{"GET", "", ""}, {"GET", "/", ""}, {"GET", "/dashboard", ""}, {"POST", "/dashboard", ""},
		{"GET", "/{room}", ""}, {"PATCH", "/{room}", `{"capacity": 2}`}, {"PUT", "/{room}", `{}`},
		{"POST", "/{room}/admit", `{"count": 1}`}, {"GET", "/{room}/admit", ""},
		{"POST", "/{room}/reset", ""}, {"DELETE", "/{room}/reset", ""},
		{"DELETE", "/{room}/visitors/00000000000000000000000000000000", ""},
		{"DELETE", "/{room}/visitors/zz", ""}, {"DELETE", "/{room}/visitors/", ""},
		{"GET", "/nosuchroom", ""}, {"GET", "/{room}/nosuch/thing", ""}, {"GET", "//{room}//", ""},
		{"BREW", "/{room}", ""}, {"GET", "/%2e%2e/config", ""},
	} {
		f.Add(s.method, s.path, []byte(s.body))
	}
	fr := newFuzzRoom(f)
	f.Fuzz(func(t *testing.T, method, path string, body []byte) {
		if method == "" || strings.ContainsFunc(method, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
			return // net/http never hands a handler such a method
		}
		fr.join()
		path = "/waiting_room" + strings.ReplaceAll(path, "{room}", fr.name)
		code, ct, out := call(t, method, path, body)
		checkAnswer(t, method+" "+path, code, ct, out, http.StatusOK, http.StatusBadRequest, http.StatusNotFound,
			http.StatusMethodNotAllowed, http.StatusRequestEntityTooLarge)
	})
}

// adminRoutes is what Caddy's admin endpoint calls for every /waiting_room/ path.
var adminRoutes = new(Admin).Routes()[1].Handler
