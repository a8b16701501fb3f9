package waitingroom

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/capacity"
)

// What the room measures of the shop, request by request, through ServeHTTP with the
// test's clock: only what the shop itself did. A slow upload is timed from when the
// shop had the whole request; a body that could not be read (a malformed chunk, a
// client gone mid-upload), a 499 and a client gone are not counted at all.

// measuredRoom is an admitted visitor of a fresh room, and what the room measured.
type measuredRoom struct {
	*testRoom
	cookie string
	before float64 // the admission's own request, counted
}

func newMeasuredRoom(t *testing.T) *measuredRoom {
	tr := newTestRoom(t, 10)
	_, cookie := tr.visit("", "")
	m := &measuredRoom{testRoom: tr, cookie: cookie}
	m.before, _ = m.measured()
	return m
}

// serve hands one request of the admitted visitor, of method with body (nil: none),
// to next through the room.
func (m *measuredRoom) serve(ctx context.Context, method string, body io.Reader, next caddyhttp.HandlerFunc) error {
	m.t.Helper()
	r := httptest.NewRequestWithContext(ctx, method, "http://shop.example/checkout", body)
	r.Header.Set("Cookie", m.h.Cookie.Name+"="+m.cookie)
	return m.h.ServeHTTP(httptest.NewRecorder(), r, next)
}

// measured moves the room's clock into the next control period and ticks, so what
// its meter holds is in the metrics, and returns the room's ttfb histogram's
// count and the failed counter.
func (m *measuredRoom) measured() (count, failed float64) {
	m.t.Helper()
	m.clock.Advance(capacity.ControlPeriod)
	Tick(m.h)
	c, _ := m.ttfb()
	var f dto.Metric
	if err := metrics.failed.WithLabelValues(m.h.Name).Write(&f); err != nil {
		m.t.Fatal(err)
	}
	return float64(c), f.GetCounter().GetValue()
}

// sum is the room's ttfb histogram's total time.
func (m *measuredRoom) sum() time.Duration {
	_, sum := m.ttfb()
	return sum
}

// ttfb is the room's ttfb histogram's count and total time, as Prometheus collects it.
func (m *measuredRoom) ttfb() (count uint64, sum time.Duration) {
	m.t.Helper()
	ch := make(chan prometheus.Metric, 64)
	metrics.ttfb.Collect(ch)
	close(ch)
	for metric := range ch {
		var d dto.Metric
		if err := metric.Write(&d); err != nil {
			m.t.Fatal(err)
		}
		if len(d.GetLabel()) == 1 && d.GetLabel()[0].GetValue() == m.h.Name {
			h := d.GetHistogram()
			return h.GetSampleCount(), time.Duration(math.Round(h.GetSampleSum() * 1e9))
		}
	}
	m.t.Fatalf("no ttfb histogram for room %q", m.h.Name)
	return 0, 0
}

// drip is a request body that takes the room's clock a step forward for each byte it
// gives: a slow upload.
type drip struct {
	clock *fakeClock
	left  int
	step  time.Duration
	err   error // returned instead of the end, when set
}

func (d *drip) Read(p []byte) (int, error) {
	if d.left == 0 {
		if d.err != nil {
			return 0, d.err
		}
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	d.clock.Advance(d.step)
	d.left--
	p[0] = 'x'
	return 1, nil
}

// A slow upload: 10 bytes at 100ms each, to a shop that reads the body whole and
// answers 3ms later. Its time to first byte is the shop's 3ms, not the client's
// second.
func TestMeasureSlowUploadFromTheWholeRequest(t *testing.T) {
	m := newMeasuredRoom(t)
	sumBefore := m.sum()
	err := m.serve(context.Background(), http.MethodPost, &drip{clock: m.clock, left: 10, step: 100 * time.Millisecond},
		func(w http.ResponseWriter, r *http.Request) error {
			if _, err := io.ReadAll(r.Body); err != nil {
				return err
			}
			m.clock.Advance(3 * time.Millisecond)
			_, err := w.Write([]byte("ok"))
			return err
		})
	if err != nil {
		t.Fatal(err)
	}
	count, failed := m.measured()
	if count != m.before+1 || failed != 0 {
		t.Fatalf("counted %v requests, %v failed; want %v, 0", count-m.before, failed, 1)
	}
	if got := m.sum() - sumBefore; got != 3*time.Millisecond {
		t.Fatalf("the slow upload's time to first byte is %v, want the shop's 3ms", got)
	}
}

// A shop that answers after reading part of a slow body is timed from the last of
// it the shop read; one that never reads the body, and a request without one, from
// handing it on.
func TestMeasureAnswerBeforeTheBodyAndNoBody(t *testing.T) {
	m := newMeasuredRoom(t)
	sumBefore := m.sum()
	answer := func(w http.ResponseWriter, r *http.Request) error {
		m.clock.Advance(40 * time.Millisecond)
		_, err := w.Write([]byte("ok"))
		return err
	}
	readSome := func(w http.ResponseWriter, r *http.Request) error {
		if _, err := io.ReadFull(r.Body, make([]byte, 3)); err != nil {
			return err
		}
		m.clock.Advance(5 * time.Millisecond)
		_, err := w.Write([]byte("too large"))
		return err
	}
	if err := m.serve(context.Background(), http.MethodPost, &drip{clock: m.clock, left: 10, step: 100 * time.Millisecond}, readSome); err != nil {
		t.Fatal(err)
	}
	if err := m.serve(context.Background(), http.MethodPost, strings.NewReader("unread"), answer); err != nil {
		t.Fatal(err)
	}
	if err := m.serve(context.Background(), http.MethodGet, nil, answer); err != nil {
		t.Fatal(err)
	}
	// A GET whose empty body something wrapped (Caddy's access log does), which the
	// proxy never reads: whole all the same.
	r := httptest.NewRequest(http.MethodGet, "http://shop.example/checkout", nil)
	r.Header.Set("Cookie", m.h.Cookie.Name+"="+m.cookie)
	r.Body = io.NopCloser(r.Body)
	if err := m.h.ServeHTTP(httptest.NewRecorder(), r, caddyhttp.HandlerFunc(answer)); err != nil {
		t.Fatal(err)
	}
	count, failed := m.measured()
	if count != m.before+4 || failed != 0 {
		t.Fatalf("counted %v requests, %v failed; want 4, 0", count-m.before, failed)
	}
	if got := m.sum() - sumBefore; got != 5*time.Millisecond+3*40*time.Millisecond {
		t.Fatalf("total time %v, want 5ms for the body read in part and 40ms each for the others", got)
	}
}

// What the shop is not the one to answer for is not counted, as latency or as
// failure: a body that could not be read, answered 502 by the proxy (a malformed
// chunk) or by the shop; a 499, written or returned; a client gone.
func TestMeasureLeavesOutWhatTheShopDidNotDo(t *testing.T) {
	m := newMeasuredRoom(t)
	badBody := func() io.Reader {
		return &drip{clock: m.clock, left: 3, step: time.Millisecond, err: errors.New(`http: invalid byte in chunk length`)}
	}
	proxy502 := func(w http.ResponseWriter, r *http.Request) error {
		_, err := io.ReadAll(r.Body)
		m.clock.Advance(time.Millisecond)
		return caddyhttp.Error(http.StatusBadGateway, err)
	}
	shop500 := func(w http.ResponseWriter, r *http.Request) error {
		_, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusInternalServerError)
		return nil
	}
	wrote499 := func(w http.ResponseWriter, r *http.Request) error {
		m.clock.Advance(10 * time.Millisecond)
		w.WriteHeader(statusClientClosed)
		return nil
	}
	returned499 := func(w http.ResponseWriter, r *http.Request) error {
		m.clock.Advance(10 * time.Millisecond)
		return caddyhttp.Error(statusClientClosed, context.Canceled)
	}
	failedBefore := 0.0
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	goneButAnswered := func(w http.ResponseWriter, r *http.Request) error {
		m.clock.Advance(10 * time.Millisecond)
		w.WriteHeader(http.StatusServiceUnavailable)
		return nil
	}
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		method string
		body   io.Reader
		next   caddyhttp.HandlerFunc
	}{
		{"a bad chunk, the proxy's 502", context.Background(), http.MethodPost, badBody(), proxy502},
		{"a bad chunk, the shop's 500", context.Background(), http.MethodPost, badBody(), shop500},
		{"a 499 written", context.Background(), http.MethodGet, nil, wrote499},
		{"a 499 returned", context.Background(), http.MethodGet, nil, returned499},
		{"a client gone", gone, http.MethodGet, nil, goneButAnswered},
	} {
		for range 30 {
			_ = m.serve(tc.ctx, tc.method, tc.body, tc.next)
		}
		count, failed := m.measured()
		if count != m.before || failed != failedBefore {
			t.Errorf("%s: counted %v requests, %v failed; want none", tc.name, count-m.before, failed-failedBefore)
		}
		m.before, failedBefore = count, failed
	}
}
