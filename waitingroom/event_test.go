package waitingroom_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/testredis"
	"github.com/caddy-waitingroom/caddy-waitingroom/waitingroom"
	_ "github.com/caddy-waitingroom/caddy-waitingroom/waitingroom/redisstore"
)

var eventRooms atomic.Int64

// eventRoom is a provisioned handler on a given store, with a clock the test drives.
type eventRoom struct {
	t      *testing.T
	h      *waitingroom.Handler
	clock  *waitingroom.TestClock
	passed atomic.Int64
}

func newEventRoom(t *testing.T, store string, start time.Time, configure func(*waitingroom.Handler)) *eventRoom {
	t.Helper()
	clk := waitingroom.NewTestClock(start)
	h := &waitingroom.Handler{
		Name:       fmt.Sprintf("event-%d-%d", time.Now().UnixNano(), eventRooms.Add(1)),
		Capacity:   100,
		SessionTTL: caddy.Duration(time.Minute),
		QueueTTL:   caddy.Duration(time.Hour), // liveness is not what these tests are about
		StoreRaw:   json.RawMessage(store),
	}
	configure(h)
	waitingroom.SetClock(h, clk)
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	if err := h.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = h.Cleanup()
	})
	return &eventRoom{t: t, h: h, clock: clk}
}

type answer struct {
	Status          string `json:"status"`
	Position        int    `json:"position"`
	ETASeconds      *int   `json:"eta_seconds"`
	StartsInSeconds *int   `json:"starts_in_seconds"`
}

// visit makes one JSON request with cookie ("" for a new visitor) and returns the
// answer (Status "admitted" when it reached the upstream) and the cookie to send next.
func (er *eventRoom) visit(cookie string) (answer, string) {
	er.t.Helper()
	r := httptest.NewRequest(http.MethodGet, "http://shop.example/", nil)
	r.Header.Set("Accept", "application/json")
	if cookie != "" {
		r.Header.Set("Cookie", er.h.Cookie.Name+"="+cookie)
	}
	w := httptest.NewRecorder()
	admitted := false
	next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error {
		admitted = true
		return nil
	})
	if err := er.h.ServeHTTP(w, r, next); err != nil {
		er.t.Fatal(err)
	}
	for _, c := range w.Result().Cookies() {
		if c.Name == er.h.Cookie.Name {
			cookie = c.Value
		}
	}
	if admitted {
		return answer{Status: "admitted"}, cookie
	}
	var a answer
	if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil {
		er.t.Fatalf("not JSON: %d %q", w.Code, w.Body.String())
	}
	return a, cookie
}

// The whole life of a scheduled event, on each store: normal before the pre-queue;
// during it everyone queues and sees the countdown; at the start the pre-queued are
// drawn in random order and the event's capacity applies; later arrivals queue behind
// them; after the end the room's own capacity is back.
func TestEventLifecycle(t *testing.T) {
	stores := map[string]func(t *testing.T) string{
		"memory": func(*testing.T) string { return `{"type":"memory"}` },
		"redis": func(t *testing.T) string {
			srv := testredis.Start(t)
			return fmt.Sprintf(`{"type":"redis","url":"redis://%s"}`, srv.Addr)
		},
	}
	for name, store := range stores {
		t.Run(name, func(t *testing.T) { testEventLifecycle(t, store(t)) })
	}
}

func testEventLifecycle(t *testing.T, store string) {
	start := time.Date(2031, 11, 28, 9, 0, 0, 0, time.UTC)
	er := newEventRoom(t, store, start.Add(-time.Hour), func(h *waitingroom.Handler) {
		h.Capacity = 100
		h.Events = []waitingroom.Event{{
			Start: start, End: start.Add(time.Hour), Prequeue: caddy.Duration(10 * time.Minute),
			Shuffle: true, Capacity: 3,
		}}
	})

	// An hour before: the room runs as configured.
	if a, _ := er.visit(""); a.Status != "admitted" {
		t.Fatalf("before the pre-queue a visitor got %+v, want admitted", a)
	}

	// The pre-queue opens: nobody is admitted (capacity is free), everyone sees the
	// countdown and no ETA.
	er.clock.Advance(50 * time.Minute)
	const early = 12
	cookies := make([]string, early)
	for i := range cookies {
		a, c := er.visit("")
		if a.Status != "queued" || a.Position != i+1 || a.ETASeconds != nil ||
			a.StartsInSeconds == nil || *a.StartsInSeconds != 600 {
			t.Fatalf("arrival %d in the pre-queue got %+v, want queued at %d, no ETA, 600 s to the start", i+1, a, i+1)
		}
		cookies[i] = c
	}
	er.clock.Advance(4 * time.Minute)
	waitingroom.Tick(er.h)
	if a, _ := er.visit(cookies[0]); a.Status != "queued" || *a.StartsInSeconds != 360 {
		t.Fatalf("six minutes before the start, the first waiter got %+v", a)
	}

	// The start: lots are drawn, the event's capacity of 3 applies (the visitor from
	// before has expired), and a newcomer queues behind every pre-queued waiter.
	er.clock.Advance(6 * time.Minute)
	waitingroom.Tick(er.h)
	var admitted, order []int
	positions := map[int]int{}
	for i, c := range cookies {
		a, _ := er.visit(c)
		switch a.Status {
		case "admitted":
			admitted = append(admitted, i)
		case "queued":
			if a.StartsInSeconds != nil {
				t.Fatalf("after the start waiter %d still sees a countdown: %+v", i, a)
			}
			positions[a.Position] = i
		default:
			t.Fatalf("after the start waiter %d got %+v", i, a)
		}
	}
	if len(admitted) != 3 {
		t.Fatalf("the event's capacity is 3, %d were admitted at the start (%v)", len(admitted), admitted)
	}
	for p := 1; p <= early-3; p++ {
		i, ok := positions[p]
		if !ok {
			t.Fatalf("positions after the draw %v are not 1..%d", positions, early-3)
		}
		order = append(order, i)
	}
	// Twelve waiters keeping arrival order through a uniform draw: odds 1 in 12!.
	if all := append(slices.Clone(admitted), order...); slices.IsSorted(all) {
		t.Fatalf("the draw kept arrival order: admitted %v, then %v", admitted, order)
	}
	if a, _ := er.visit(""); a.Status != "queued" || a.Position != early-3+1 {
		t.Fatalf("an arrival after the start got %+v, want queued behind the %d drawn", a, early-3)
	}
	// Another instance's (or a second) call for the same event does not draw again.
	if again, err := waitingroom.StoreOf(er.h).Shuffle(context.Background(), start.UTC().Format(time.RFC3339Nano)); err != nil || again {
		t.Fatalf("a second draw for the same event: %v, %v; want none", again, err)
	}

	// The end: the room's capacity of 100 is back and everyone goes in.
	er.clock.Advance(time.Hour)
	waitingroom.Tick(er.h)
	for i, c := range cookies {
		if a, _ := er.visit(c); a.Status != "admitted" {
			t.Fatalf("after the event waiter %d got %+v, want admitted", i, a)
		}
	}
	if a, _ := er.visit(""); a.Status != "admitted" {
		t.Fatalf("a newcomer after the event got %+v, want admitted", a)
	}
}
