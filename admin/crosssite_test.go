package admin

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// hostileRequest is a request a web page on another site can make a browser send, as
// the admin routes receive it when a proxy in front has vouched for its Origin.
type hostileRequest struct {
	name          string
	method, route string // route is under /waiting_room/<room>
	header        map[string]string
	body          string
	want          int
}

// A change that a page on another site could have sent is refused, and changes
// nothing: a browser's Sec-Fetch-Site saying another site, or a POST that is not JSON
// (what a plain form or a no-cors fetch sends, since neither may set
// application/json without asking the server first).
func TestChangesRefuseCrossSiteRequests(t *testing.T) {
	fr := newFuzzRoom(t)
	for range 3 {
		fr.join()
	}
	// The refusal comes before the visitor is looked up, so any well-formed id shows it.
	const id = "00000000000000000000000000000000"
	const admit, patch = `{"count": 1000000}`, `{"capacity": 50}`
	crossSite := map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}
	sameSite := map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "same-site"}
	for _, tc := range []hostileRequest{
		{"fetch from another site", "POST", "/admit", crossSite, admit, http.StatusForbidden},
		{"fetch from a sibling host", "POST", "/admit", sameSite, admit, http.StatusForbidden},
		{"fetch from another site, odd case", "POST", "/admit", map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "Cross-Site"}, admit, http.StatusForbidden},
		{"fetch with an unknown Sec-Fetch-Site", "POST", "/admit", map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "elsewhere"}, admit, http.StatusForbidden},
		{"form reset from another site", "POST", "/reset", map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Sec-Fetch-Site": "cross-site"}, "", http.StatusForbidden},
		{"patch from another site", "PATCH", "", crossSite, patch, http.StatusForbidden},
		{"passes from another site", "POST", "/passes", crossSite, `{"count": 1}`, http.StatusForbidden},
		{"remove from another site", "DELETE", "/visitors/" + id, map[string]string{"Sec-Fetch-Site": "cross-site"}, "", http.StatusForbidden},
		// Browsers without Fetch Metadata: the content type is what gives a page away.
		{"form reset", "POST", "/reset", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, "", http.StatusUnsupportedMediaType},
		{"multipart form reset", "POST", "/reset", map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, "", http.StatusUnsupportedMediaType},
		{"no-cors text admit", "POST", "/admit", map[string]string{"Content-Type": "text/plain;charset=UTF-8"}, admit, http.StatusUnsupportedMediaType},
		{"text form admit", "POST", "/admit", map[string]string{"Content-Type": "text/plain"}, admit, http.StatusUnsupportedMediaType},
		{"bodiless no-cors reset", "POST", "/reset", nil, "", http.StatusUnsupportedMediaType},
		{"json lookalike", "POST", "/admit", map[string]string{"Content-Type": "application/jsonp"}, admit, http.StatusUnsupportedMediaType},
		{"json in a parameter", "POST", "/admit", map[string]string{"Content-Type": "text/plain; x=application/json"}, admit, http.StatusUnsupportedMediaType},
		{"malformed content type", "POST", "/reset", map[string]string{"Content-Type": "application/json;;;="}, "", http.StatusUnsupportedMediaType},
		{"form passes", "POST", "/passes", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, `{"count": 1}`, http.StatusUnsupportedMediaType},
	} {
		before := fr.info(t)
		code, out := send(t, fr, tc)
		if code != tc.want {
			t.Errorf("%s: %s %s answered %d %s, want %d", tc.name, tc.method, tc.route, code, out, tc.want)
		}
		if after := fr.info(t); after.Active != before.Active || after.Waiting != before.Waiting || after.Capacity != before.Capacity {
			t.Errorf("%s: the room went from active %d waiting %d capacity %d to %d %d %d",
				tc.name, before.Active, before.Waiting, before.Capacity, after.Active, after.Waiting, after.Capacity)
		}
	}
}

// What the dashboard on its own origin, the caddy CLI and curl send is still served.
func TestChangesServeSameOriginAndTools(t *testing.T) {
	fr := newFuzzRoom(t)
	for range 4 {
		fr.join()
	}
	for _, tc := range []hostileRequest{
		{"dashboard admit", "POST", "/admit", map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "same-origin"}, `{"count": 1}`, http.StatusOK},
		{"curl admit", "POST", "/admit", map[string]string{"Content-Type": "application/json"}, `{"count": 1}`, http.StatusOK},
		{"typed admit", "POST", "/admit", map[string]string{"Content-Type": "Application/JSON; charset=utf-8", "Sec-Fetch-Site": "none"}, `{"count": 1}`, http.StatusOK},
		{"curl patch without a content type", "PATCH", "", nil, `{"capacity": 5}`, http.StatusOK},
		{"dashboard reset", "POST", "/reset", map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "same-origin"}, "", http.StatusOK},
	} {
		if code, out := send(t, fr, tc); code != tc.want {
			t.Errorf("%s: %s %s answered %d %s, want %d", tc.name, tc.method, tc.route, code, out, tc.want)
		}
	}
	if info := fr.info(t); info.Capacity != 5 || info.Active != 0 || info.Waiting != 0 {
		t.Fatalf("after three admits, a patch and a reset the room is %+v", info)
	}
}

// send makes one request to a route of fr's room and returns its status and answer.
func send(t *testing.T, fr *fuzzRoom, tc hostileRequest) (int, string) {
	t.Helper()
	r := httptest.NewRequest(tc.method, "http://localhost:2019/waiting_room/"+fr.name+tc.route, bytes.NewReader([]byte(tc.body)))
	for k, v := range tc.header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	if err := adminRoutes.ServeHTTP(w, r); err != nil {
		apiErr, ok := err.(caddy.APIError)
		if !ok {
			t.Fatalf("%s: %v is not a caddy.APIError", tc.name, err)
		}
		return apiErr.HTTPStatus, apiErr.Err.Error()
	}
	return w.Code, w.Body.String()
}
