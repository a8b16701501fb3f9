package waitingroom

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/page"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

func testGauge(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

func (tr *testRoom) patch(body string) room.Info {
	tr.t.Helper()
	info, err := tr.h.room.Patch(context.Background(), []byte(body))
	if err != nil {
		tr.t.Fatalf("PATCH %s: %v", body, err)
	}
	return info
}

func (tr *testRoom) stats() queue.Stats {
	tr.t.Helper()
	st, err := tr.h.store.Stats(context.Background())
	if err != nil {
		tr.t.Fatal(err)
	}
	return st
}

// What a new visitor meets in each mode once the room's one slot is taken.
func TestModes(t *testing.T) {
	for _, tc := range []struct {
		mode       string
		code       int    // for the second visitor
		status     string // JSON status for the second visitor; "" means it reached the upstream
		cookie     bool   // whether the second visitor got a room cookie
		active     int    // store counts after two visitors and a step
		waiting    int
		etaHidden  bool
		firstPassy bool // whether the first visitor reached the upstream
	}{
		{mode: queue.ModeFIFO, code: 200, status: "queued", cookie: true, active: 1, waiting: 1, firstPassy: true},
		{mode: queue.ModeRandom, code: 200, status: "queued", cookie: true, active: 1, waiting: 1, firstPassy: true},
		{mode: queue.ModePassthrough, code: 200, status: "", cookie: true, active: 2, waiting: 0, firstPassy: true},
		{mode: queue.ModeReject, code: 503, status: "rejected", cookie: false, active: 1, waiting: 0, firstPassy: true},
		{mode: queue.ModeQueueAll, code: 200, status: "queued", cookie: true, active: 0, waiting: 2, etaHidden: true},
		{mode: queue.ModeSuspended, code: 200, status: "", cookie: false, active: 0, waiting: 0, firstPassy: true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			tr := newTestRoom(t, 1)
			tr.patch(`{"mode":"` + tc.mode + `"}`)
			w1, _ := tr.visit("", "application/json")
			if got := w1.Body.String() == "upstream"; got != tc.firstPassy {
				t.Fatalf("first visitor reached the upstream: %v, want %v (%q)", got, tc.firstPassy, w1.Body.String())
			}
			w, cookie := tr.visit("", "application/json")
			if w.Code != tc.code {
				t.Fatalf("second visitor: status %d, want %d", w.Code, tc.code)
			}
			if tc.status == "" {
				if w.Body.String() != "upstream" {
					t.Fatalf("second visitor did not reach the upstream: %q", w.Body.String())
				}
			} else {
				var v page.View
				if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || v.Status != tc.status {
					t.Fatalf("second visitor got %q, want status %q", w.Body.String(), tc.status)
				}
				if w.Header().Get("Retry-After") == "" {
					t.Fatal("a waiting or turned-away answer without Retry-After")
				}
			}
			if (cookie != "") != tc.cookie {
				t.Fatalf("second visitor got a cookie: %v, want %v", cookie != "", tc.cookie)
			}
			tr.step()
			if st := tr.stats(); st.Active != tc.active || st.Waiting != tc.waiting {
				t.Fatalf("store has %d active, %d waiting; want %d, %d", st.Active, st.Waiting, tc.active, tc.waiting)
			}
			info, err := tr.h.room.Info(context.Background())
			if err != nil || info.Mode != tc.mode || info.Configured.Mode != queue.ModeFIFO {
				t.Fatalf("Info: mode %q (configured %q), %v", info.Mode, info.Configured.Mode, err)
			}
			// The metrics keep following the store in every mode.
			if got := testGauge(t, tr.h.metrics.active); got != float64(tc.active) {
				t.Fatalf("active gauge %v, want %d", got, tc.active)
			}
			// Restoring the configured mode with null.
			if info := tr.patch(`{"mode":null}`); info.Mode != queue.ModeFIFO || info.Overrides.Mode != nil {
				t.Fatalf("after mode null: %+v", info)
			}
		})
	}
}

// A turned-away browser gets the "sold out" page, static: no script that would poll,
// reconnect or reload.
func TestRejectPage(t *testing.T) {
	tr := newTestRoom(t, 1)
	tr.patch(`{"mode":"reject"}`)
	tr.visit("", "")
	w, _ := tr.visit("", "text/html")
	body := w.Body.String()
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "60" {
		t.Fatalf("reject page: %d, Retry-After %q", w.Code, w.Header().Get("Retry-After"))
	}
	if !strings.Contains(body, "Sold out for now") || strings.Contains(body, "<script") || strings.Contains(body, "http-equiv=\"refresh\"") {
		t.Fatalf("reject page is not the static sold-out page:\n%s", body)
	}
	// The operator may choose another status for the sold-out answer.
	tr.h.RejectStatusCode = http.StatusTooManyRequests
	if w, _ := tr.visit("", "application/json"); w.Code != http.StatusTooManyRequests || !strings.Contains(w.Body.String(), `"status":"rejected"`) {
		t.Fatalf("reject_status_code 429: %d %s", w.Code, w.Body.String())
	}
}

// In random mode the page does not promise arrival order.
func TestRandomModePageSaysSo(t *testing.T) {
	tr := newTestRoom(t, 1)
	tr.visit("", "")
	w, _ := tr.visit("", "text/html")
	if !strings.Contains(w.Body.String(), "in the order they arrived") {
		t.Fatal("fifo page lost its arrival-order promise")
	}
	tr.patch(`{"mode":"random"}`)
	w, _ = tr.visit("", "text/html")
	if body := w.Body.String(); strings.Contains(body, "in the order they arrived") || !strings.Contains(body, "picked at random") {
		t.Fatalf("random-mode page still promises arrival order:\n%s", body)
	}
}

func TestPatchRateAndModeValidation(t *testing.T) {
	tr := newTestRoom(t, 5)
	ctl := tr.h.room
	info := tr.patch(`{"rate":{"count":10,"per":"1s"},"mode":"queue_all"}`)
	if info.Rate == nil || info.Rate.Count != 10 || time.Duration(info.Rate.Per) != time.Second || info.Mode != queue.ModeQueueAll {
		t.Fatalf("after PATCH: rate %+v mode %q", info.Rate, info.Mode)
	}
	if info := tr.patch(`{"rate":"off"}`); info.Rate != nil {
		t.Fatalf(`rate "off" left %+v`, info.Rate)
	}
	if info := tr.patch(`{"rate":null,"mode":null}`); info.Rate != nil || info.Mode != queue.ModeFIFO || info.Overrides != (settings.Overrides{}) {
		t.Fatalf("after restoring: %+v", info)
	}
	for body, want := range map[string]string{
		`{"mode":"lifo"}`:                       "mode must be one of",
		`{"mode":3}`:                            "mode must be a string or null",
		`{"rate":{"count":0,"per":"1s"}}`:       "rate count must be greater than 0",
		`{"rate":{"count":5}}`:                  "rate window must be a positive duration",
		`{"rate":{"count":5,"per":"1s","x":1}}`: "rate must be",
		`{"rate":"fast"}`:                       "rate must be",
		`{"colour":"red"}`:                      "the fields are: capacity, rate, mode",
	} {
		var input room.InputError
		if _, err := ctl.Patch(context.Background(), []byte(body)); err == nil || !strings.Contains(err.Error(), want) || !asInput(err, &input) {
			t.Errorf("PATCH %s: %v, want an input error with %q", body, err, want)
		}
	}
}

func asInput(err error, target *room.InputError) bool {
	e, ok := err.(room.InputError)
	*target = e
	return ok
}

// A rate-bound room (capacity to spare, 6 admissions a minute) admits by the rate, and
// tells waiters an ETA that follows the rate, not the capacity.
func TestRateBoundETAFollowsTheRate(t *testing.T) {
	tr := newTestRoomWith(t, 1000, func(h *Handler) { h.QueueTTL = caddy.Duration(time.Hour) })
	tr.patch(`{"rate":{"count":6,"per":"1m"}}`)
	var cookies []string
	passed := 0
	for range 60 {
		w, c := tr.visit("", "application/json")
		if w.Body.String() == "upstream" {
			passed++
		}
		cookies = append(cookies, c)
	}
	if passed != 6 {
		t.Fatalf("%d of 60 got in at once under a rate of 6/min with capacity 1000", passed)
	}
	for range 300 { // five minutes, a step a second
		tr.clock.Advance(time.Second)
		tr.step()
	}
	if st := tr.stats(); st.AdmittedTotal != 6+6*5 {
		t.Fatalf("%d admitted in 5 minutes at 6/min (+6 at once), want 36", st.AdmittedTotal)
	}
	rate, known := tr.h.room.Throughput()
	if !known || rate < 0.09 || rate > 0.11 {
		t.Fatalf("measured throughput %.3f/s (known %v), want the rate's 0.1/s", rate, known)
	}
	last := cookies[len(cookies)-1]
	v := tr.queued(last)
	if v.ETASeconds == nil || *v.ETASeconds != v.Position*10 {
		t.Fatalf("waiter at %d has ETA %v s, want %d s (10 s per place at 6/min)", v.Position, v.ETASeconds, v.Position*10)
	}
}

// A template that fails to parse fails Provision (and so `caddy validate`); one that
// fails while rendering falls back to the embedded page and logs the error.
func TestTemplateErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.html")
	os.WriteFile(bad, []byte(`<p>{{.Position</p>`), 0o644)
	h := &Handler{Name: "template-bad", Capacity: 1, Template: bad}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	err := h.Provision(ctx)
	_ = h.Cleanup()
	if err == nil || !strings.Contains(err.Error(), "parsing template") {
		t.Fatalf("Provision with a broken template: %v", err)
	}

	// Renders with the sample data (position 12), breaks beyond position 100.
	fragile := filepath.Join(dir, "fragile.html")
	os.WriteFile(fragile, []byte(`{{if gt .Position 100}}{{index .T.nope 5}}{{end}}<p>custom page {{.Position}}</p>`), 0o644)
	tr := newTestRoom(t, 1)
	tr.h.Template = fragile
	tmpl, err := os.ReadFile(fragile)
	if err != nil {
		t.Fatal(err)
	}
	if tr.h.page.Page, err = page.NewPage(fragile, string(tmpl)); err != nil {
		t.Fatalf("a template that renders the sample was refused: %v", err)
	}
	core, logs := observer.New(zapcore.ErrorLevel)
	tr.h.logger = zap.New(core)
	tr.visit("", "")
	var cookies []string
	for range 101 {
		_, c := tr.visit("", "application/json")
		cookies = append(cookies, c)
	}
	if w, _ := tr.visit(cookies[0], "text/html"); !strings.Contains(w.Body.String(), "custom page 1") {
		t.Fatalf("position 1 did not get the operator's page: %q", w.Body.String())
	}
	w, _ := tr.visit(cookies[100], "text/html")
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `id="wr-position"`) {
		t.Fatalf("position 101 did not fall back to the embedded page: %d %q", w.Code, w.Body.String())
	}
	if logs.FilterMessage("waiting page template failed; serving the embedded page").Len() != 1 {
		t.Fatalf("the template failure was not logged: %v", logs.All())
	}
}

func TestPreview(t *testing.T) {
	tr := newTestRoom(t, 4)
	ctl := tr.h.room
	for _, tc := range []struct {
		state, lang, want string
	}{
		{"queued", "", "You are number"},
		{"queued", "ko-KR", "나의 대기 순서"},
		{"prequeue", "en", "It opens in"},
		{"rejected", "en", "Sold out for now"},
		{"unavailable", "ko", "대기실을 일시적으로 이용할 수 없습니다"},
	} {
		body, header, err := ctl.Preview(tc.state, 37, tc.lang)
		if err != nil || !strings.Contains(string(body), tc.want) || !strings.Contains(header.Get("Content-Security-Policy"), "'nonce-") {
			t.Fatalf("preview %s/%s: %v, page lacks %q or its policy a nonce (%v):\n%s", tc.state, tc.lang, err, tc.want, header, body)
		}
		if tc.state == "queued" && !strings.Contains(string(body), ">37<") {
			t.Fatalf("queued preview does not show position 37")
		}
	}
	if _, _, err := ctl.Preview("admitted", 1, ""); err == nil {
		t.Fatal("an unknown preview state was accepted")
	}
	if _, _, err := ctl.Preview("queued", 0, ""); err == nil {
		t.Fatal("position 0 was accepted")
	}
}

// The status code is one of the four a waiting answer may have, and applies to the
// queued page and JSON alike.
func TestStatusCodes(t *testing.T) {
	for _, code := range page.Statuses {
		tr := newTestRoom(t, 1)
		tr.h.StatusCode = code
		tr.visit("", "")
		for _, accept := range []string{"application/json", "text/html"} {
			w, _ := tr.visit("", accept)
			if w.Code != code || w.Header().Get("Retry-After") == "" {
				t.Fatalf("status_code %d (%s): got %d, Retry-After %q", code, accept, w.Code, w.Header().Get("Retry-After"))
			}
		}
	}
}

func TestRejectStatusCodeParses(t *testing.T) {
	var h Handler
	if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser("waiting_room {\n name a\n capacity 1\n reject_status_code 429\n}")); err != nil || h.RejectStatusCode != 429 {
		t.Fatalf("reject_status_code 429: %v, %d", err, h.RejectStatusCode)
	}
	err := new(Handler).UnmarshalCaddyfile(caddyfile.NewTestDispenser("waiting_room {\n name a\n capacity 1\n reject_status_code 418\n}"))
	if err == nil || !strings.Contains(err.Error(), "reject_status_code must be one of") || !strings.Contains(err.Error(), "Testfile:4") {
		t.Fatalf("reject_status_code 418: %v", err)
	}
}
