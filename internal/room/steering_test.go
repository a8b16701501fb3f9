package room

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/capacity"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// downStore is a store that can be taken down: every call then fails.
type downStore struct {
	queue.Store
	down atomic.Bool
}

var errDown = errors.New("store down")

func (s *downStore) Overrides(ctx context.Context) ([]byte, error) {
	if s.down.Load() {
		return nil, errDown
	}
	return s.Store.Overrides(ctx)
}

func (s *downStore) Report(ctx context.Context, period int64, o queue.Sample) error {
	if s.down.Load() {
		return errDown
	}
	return s.Store.Report(ctx, period, o)
}

// fleet is n rooms of capacity on one store and one clock, the adaptive capacity on,
// their loops not running: the test ticks them.
func fleet(t *testing.T, n, roomCapacity int, a capacity.Targets) ([]*Room, *testClock, *downStore) {
	t.Helper()
	store := &downStore{Store: queue.NewMemoryStore()}
	clk := &testClock{now: capacity.PeriodStart(capacity.PeriodOf(time.Unix(1_800_000_000, 0)))}
	rooms := make([]*Room, n)
	for i := range rooms {
		cfg, _ := testConfig(roomCapacity, func(c *Config) {
			c.Store, c.Clock, c.Adapt = store, clk, &a
		})
		rooms[i] = New(cfg)
	}
	return rooms, clk, store
}

// fill joins n visitors: capacity of them are admitted, the rest wait.
func fill(t *testing.T, rm *Room, n int, now time.Time) {
	t.Helper()
	lim := rm.Settings(now).Limits()
	for range n {
		if _, err := rm.cfg.Store.Join(context.Background(), queue.NewVisitorID(), now, lim); err != nil {
			t.Fatal(err)
		}
	}
}

// tickAll ticks every room at the clock's time.
func tickAll(rooms []*Room) {
	for _, rm := range rooms {
		rm.tick(context.Background())
	}
}

// runPeriod has each room serve perRoom requests of ttfb in the clock's period, then
// moves the clock past the period's end and its grace and ticks the rooms, so the
// period is reported and decided on.
func runPeriod(rooms []*Room, clk *testClock, perRoom int, ttfb time.Duration) {
	runPeriodWith(rooms, clk, func(rm *Room) {
		for range perRoom {
			rm.Served(queue.NewVisitorID(), ttfb, false)
		}
	})
}

// runPeriodWith is runPeriod with each room serving what serve has it serve.
func runPeriodWith(rooms []*Room, clk *testClock, serve func(*Room)) {
	tickAll(rooms) // each room now measures into this period
	for _, rm := range rooms {
		serve(rm)
	}
	next := capacity.PeriodStart(capacity.PeriodOf(clk.Now()) + 1)
	clk.set(next.Add(time.Millisecond))
	tickAll(rooms) // reports
	clk.set(next.Add(capacity.ReportGrace + time.Millisecond))
	tickAll(rooms) // one of them decides
}

// The rooms of a fleet report to one sample per period, one of them decides, and
// all apply and show the same capacity.
func TestSteeringAcrossAFleet(t *testing.T) {
	a := capacity.Targets{Latency: 100 * time.Millisecond, Errors: 0.05, Min: 2, Max: 50}
	rooms, clk, _ := fleet(t, 2, 10, a)
	ctx := context.Background()
	fill(t, rooms[0], 30, clk.Now())

	// 15 slow requests on each: too few on either alone, enough for the fleet.
	runPeriod(rooms, clk, capacity.MinReading/2+5, 500*time.Millisecond)
	for i, rm := range rooms {
		if got := rm.Settings(clk.Now()).Capacity; got != 5 {
			t.Errorf("room %d: capacity %d after a slow period, want 5 (half of 10: p90 is 5× the target)", i, got)
		}
		info, err := rm.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ad := info.Adapt
		if ad == nil || ad.Reason == nil || !strings.HasPrefix(*ad.Reason, "lowered: p90 ") || *ad.Requests != 2*(capacity.MinReading/2+5) {
			t.Fatalf("room %d: adapt %+v, want lowered on the fleet's %d requests", i, ad, 2*(capacity.MinReading/2+5))
		}
		if info.Capacity != 5 || *ad.Capacity != 5 {
			t.Errorf("room %d: the room object says capacity %d, adapt %d; want 5 and 5", i, info.Capacity, *ad.Capacity)
		}
		if info.Overrides.Adapted != nil || info.Overrides.Capacity != nil {
			t.Errorf("room %d: the controller's decision shows as the operator's overrides: %+v", i, info.Overrides)
		}
	}

	// A fast period with the line waiting at a full room raises it, once.
	runPeriod(rooms, clk, capacity.MinReading, time.Millisecond)
	got := rooms[1].Settings(clk.Now()).Capacity
	if got <= 5 || got > 7 {
		t.Fatalf("capacity %d after a fast period at a full room with a line, want 6 or 7 (raised once, not twice)", got)
	}
	if rooms[0].Settings(clk.Now()).Capacity != got {
		t.Fatalf("the rooms disagree: %d and %d", rooms[0].Settings(clk.Now()).Capacity, got)
	}

	// Too few requests: it holds.
	runPeriod(rooms, clk, 1, 10*time.Second)
	if c := rooms[0].Settings(clk.Now()).Capacity; c != got {
		t.Fatalf("capacity %d after a period of two requests, want it held at %d", c, got)
	}
}

// A store outage holds the capacity, during it and in the period after it.
func TestSteeringHoldsThroughAnOutage(t *testing.T) {
	a := capacity.Targets{Latency: 100 * time.Millisecond, Errors: 0.05, Min: 2, Max: 50}
	rooms, clk, store := fleet(t, 1, 10, a)
	fill(t, rooms[0], 30, clk.Now())
	store.down.Store(true)
	for range 3 {
		runPeriod(rooms, clk, 100, 5*time.Second)
	}
	if c := rooms[0].Settings(clk.Now()).Capacity; c != 10 {
		t.Fatalf("capacity %d after an outage, want it held at 10", c)
	}
	store.down.Store(false)
	// The first period after: its few requests hold the capacity, whatever the
	// meter held from before.
	runPeriod(rooms, clk, 1, time.Millisecond)
	if c := rooms[0].Settings(clk.Now()).Capacity; c != 10 {
		t.Fatalf("capacity %d just after the outage, want it held at 10", c)
	}
}

// The operator's PATCHes: capacity is where the controller continues from; null
// turns adapt off at the capacity in force; an object turns it on again.
func TestSteeringAndTheOperator(t *testing.T) {
	a := capacity.Targets{Latency: 100 * time.Millisecond, Errors: 0.05, Min: 2, Max: 50}
	rooms, clk, _ := fleet(t, 1, 10, a)
	rm := rooms[0]
	ctx := context.Background()
	fill(t, rm, 60, clk.Now())
	runPeriod(rooms, clk, 50, 500*time.Millisecond)
	if c := rm.Settings(clk.Now()).Capacity; c != 5 {
		t.Fatalf("capacity %d, want 5", c)
	}
	if _, err := rm.Patch(ctx, []byte(`{"capacity": 40}`)); err != nil {
		t.Fatal(err)
	}
	if c := rm.Settings(clk.Now()).Capacity; c != 40 {
		t.Fatalf("capacity %d after PATCH capacity 40 with adapt on, want 40", c)
	}
	runPeriod(rooms, clk, 50, 200*time.Millisecond)
	if c := rm.Settings(clk.Now()).Capacity; c != 20 {
		t.Fatalf("capacity %d after a period at twice the target from 40, want 20", c)
	}
	info, err := rm.Patch(ctx, []byte(`{"adapt": null}`))
	if err != nil {
		t.Fatal(err)
	}
	if info.Adapt != nil || info.Capacity != 20 || info.Overrides.Capacity == nil || *info.Overrides.Capacity != 20 {
		t.Fatalf("after PATCH adapt null: adapt %+v, capacity %d, overrides %+v; want off at 20", info.Adapt, info.Capacity, info.Overrides)
	}
	runPeriod(rooms, clk, 50, 5*time.Second)
	if c := rm.Settings(clk.Now()).Capacity; c != 20 {
		t.Fatalf("capacity %d with adapt off, want it to stay 20", c)
	}
	info, err = rm.Patch(ctx, []byte(`{"adapt": {"latency": "1s", "max": 30}}`))
	if err != nil {
		t.Fatal(err)
	}
	if info.Adapt == nil || info.Adapt.Latency != "1s" || info.Adapt.Max != 30 || info.Adapt.Min != 2 || info.Adapt.Errors != "5%" {
		t.Fatalf("after PATCH adapt on: %+v", info.Adapt)
	}
}

// What a careless operator or a script PATCHes to adapt is refused with a reason,
// and changes nothing.
func TestPatchAdaptRefuses(t *testing.T) {
	rm, _ := newTestRoom(t, 10, nil)
	ctx := context.Background()
	for _, tc := range []struct{ body, want string }{
		{`{"adapt": {"errors": "2%"}}`, `adapt is off: turning it on needs a "latency" target`},
		{`{"adapt": {"latency": 800}}`, ""},
		{`{"adapt": {"latency": "soon"}}`, `adapt latency must be a duration string such as "800ms"`},
		{`{"adapt": {"latency": "-1s"}}`, "adapt latency must be a positive duration"},
		{`{"adapt": {"latency": "1s", "errors": 0.02}}`, `adapt errors must be a percentage string such as "2%"`},
		{`{"adapt": {"latency": "1s", "errors": "200%"}}`, "adapt errors must be a percentage from 0% to 100%"},
		{`{"adapt": {"latency": "1s", "min": 0}}`, "adapt min must be at least 1"},
		{`{"adapt": {"latency": "1s", "min": 5, "max": 4}}`, "adapt max (4) must be at least min (5)"},
		{`{"adapt": {"latency": "1s", "speed": 9}}`, `adapt must be an object of any of "latency", "errors", "min" and "max"`},
		{`{"adapt": [1]}`, `adapt must be an object`},
		{`{"adapt": "on"}`, `adapt must be an object`},
	} {
		_, err := rm.Patch(ctx, []byte(tc.body))
		if tc.want == "" {
			// A number is nanoseconds, as the configuration reads it: 800ns is a
			// target, if a strange one; what matters is that it is read, not refused.
			if err != nil {
				t.Errorf("PATCH %s: %v", tc.body, err)
			}
			_, _ = rm.Patch(ctx, []byte(`{"adapt": null}`))
			_, _ = rm.Patch(ctx, []byte(`{"capacity": null}`))
			continue
		}
		var in InputError
		if !errors.As(err, &in) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("PATCH %s = %v, want an InputError containing %q", tc.body, err, tc.want)
		}
	}
	if info, _ := rm.Info(ctx); info.Adapt != nil || info.Capacity != 10 {
		t.Errorf("after refused PATCHes: adapt %+v, capacity %d; want off, 10", info.Adapt, info.Capacity)
	}
}

// One admitted visitor flooding a cheap page cannot outvote the visitors the shop is
// slow for: the room full and a line waiting, nine visitors' pages take 600ms
// against a 300ms target, and the flooder's thousands of 1ms requests weigh as
// capacity.PerVisitor of them. The capacity comes down; read by requests, it went up.
func TestSteeringWeighsVisitorsNotRequests(t *testing.T) {
	a := capacity.Targets{Latency: 300 * time.Millisecond, Errors: 0.05, Min: 1, Max: 40}
	rooms, clk, _ := fleet(t, 1, 10, a)
	rm := rooms[0]
	fill(t, rm, 12, clk.Now())
	honest := make([]queue.VisitorID, 9)
	for i := range honest {
		honest[i] = queue.NewVisitorID()
	}
	flooder := queue.NewVisitorID()
	runPeriodWith(rooms, clk, func(rm *Room) {
		for _, id := range honest {
			for range 3 {
				rm.Served(id, 600*time.Millisecond, false)
			}
		}
		for range 5000 {
			rm.Served(flooder, time.Millisecond, false)
		}
	})
	info, err := rm.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ad := info.Adapt
	if ad == nil || ad.Reason == nil {
		t.Fatalf("no decision: %+v", ad)
	}
	if !strings.HasPrefix(*ad.Reason, "lowered: p90 ") || info.Capacity >= 10 || *ad.Requests != uint64(len(honest)*3+capacity.PerVisitor) {
		t.Fatalf("capacity %d, %q on %d requests: want lowered for the shop's slow pages, on %d requests (the flooder's %d of 5000)",
			info.Capacity, *ad.Reason, *ad.Requests, len(honest)*3+capacity.PerVisitor, capacity.PerVisitor)
	}
}
