package rehearse

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/capacity"
	"github.com/caddy-waitingroom/caddy-waitingroom/internal/settings"
)

// rehearse runs sale against the variants, failing the test on an error.
func rehearse(t *testing.T, sale Sale, vs ...Variant) []*Result {
	t.Helper()
	res, err := Rehearse(context.Background(), sale, vs, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func room1(capacity int) Variant {
	return Variant{Label: "the room", Config: configFor(capacity)}
}

// at once is n visitors arriving within a second.
func atOnce(n int) []Segment { return []Segment{{N: n, Over: time.Second}} }

func minutes(s *Seconds) float64 { return float64(*s) / 60 }

func TestNobodyWaitsUnderCapacity(t *testing.T) {
	s := rehearse(t, Sale{Arrivals: []Segment{{N: 500, Over: 10 * time.Minute}}}, room1(1000))[0].Summary
	if s.Admitted != 500 || s.AdmittedAtOnce != 500 || s.MaxWaiting != 0 || s.WaitP90 != 0 || *s.ClearsAfter != 0 || s.ETA.Shown != 0 {
		t.Fatalf("a room with room for everyone: %+v", s)
	}
}

// With a checkout, a slot frees as the shopper leaves: capacity 100, 1,000 at once
// and two minutes in the shop each is ten rounds of two minutes, each the next
// hundred's navigation (about half a second) later.
func TestTheLineClearsAsTheShoppersCheckOut(t *testing.T) {
	sale := Sale{Arrivals: atOnce(1000), Stay: Spread{Base: 2 * time.Minute}, Checkout: 1}
	r := rehearse(t, sale, room1(100))[0]
	s := r.Summary
	if s.Admitted != 1000 || s.GaveUp != 0 {
		t.Fatalf("everyone gets in: %+v", s)
	}
	if c := minutes(s.ClearsAfter); c < 18 || c > 18.2 {
		t.Fatalf("the line clears after %.2f min, want nine rounds of 2 min and a navigation: 18 to 18.2", c)
	}
	for m := 0; m <= 18; m += 2 {
		if got := r.Minutes[m].Admissions; got != 100 {
			t.Fatalf("minute %d: %d admissions, want a hundred every second minute; minutes: %+v", m, got, r.Minutes[:20])
		}
	}
	if p50 := minutes(&s.WaitP50); p50 < 8 || p50 > 8.2 {
		t.Fatalf("the median waits four rounds and a bit: %.2f min", p50)
	}
}

// Without a checkout, the slot of a shopper who simply stops is held session_ttl
// (5m) after the last request: rounds of 2 + 5 minutes.
func TestWalkingAwayHoldsTheSlotForSessionTTL(t *testing.T) {
	sale := Sale{Arrivals: atOnce(1000), Stay: Spread{Base: 2 * time.Minute}}
	s := rehearse(t, sale, room1(100))[0].Summary
	if c := minutes(s.ClearsAfter); c < 63 || c > 63.5 {
		t.Fatalf("the line clears after %.2f min, want nine rounds of 7 min: 63 to 63.5", c)
	}
}

// Of the people still waiting at the wait given, the share given leave for good.
func TestAShareGivesUp(t *testing.T) {
	sale := Sale{Arrivals: atOnce(1000), Stay: Spread{Base: 2 * time.Minute}, Checkout: 1,
		GiveUp: []GiveUp{{Share: 0.3, After: time.Minute}}}
	s := rehearse(t, sale, room1(100))[0].Summary
	// 900 wait past the first minute: 270 give up, give or take three deviations of 14.
	if s.GaveUp < 229 || s.GaveUp > 311 {
		t.Fatalf("%d gave up, want about 30%% of 900", s.GaveUp)
	}
	if s.Admitted+s.GaveUp != 1000 {
		t.Fatalf("everyone else gets in: %+v", s)
	}
}

// A phone that sleeps for less than away_ttl keeps its place; with away_ttl no
// longer than queue_ttl the place is lost, and the sleeper starts again at the back.
func TestSleepingPhonesKeepTheirPlaceWithinAwayTTL(t *testing.T) {
	sale := Sale{Arrivals: atOnce(200), Stay: Spread{Base: time.Minute}, Checkout: 1,
		Sleep: Sleep{Share: 0.5, For: Spread{Base: 3 * time.Minute}, After: Spread{Base: 30 * time.Second}}}
	kept := room1(10)
	lost := Variant{Label: "away_ttl 1m", Config: configFor(10), Patch: []byte(`{"away_ttl": "1m"}`)}
	res := rehearse(t, sale, kept, lost)
	k, l := res[0].Summary, res[1].Summary
	if k.Admitted != 200 || l.Admitted != 200 {
		t.Fatalf("everyone gets in at last: %d and %d", k.Admitted, l.Admitted)
	}
	if k.WaitMax >= l.WaitMax || k.WaitP90 > l.WaitP90 {
		t.Fatalf("sleepers who lose their place wait longer: kept %+v, lost %+v", k, l)
	}
	if c := minutes(k.ClearsAfter); c > 20.5 {
		t.Fatalf("with places kept, 200 at 10 a minute clear in about 20 min, not %.1f", c)
	}
}

// A visitor whose turn comes while away for good holds the slot until arrive_ttl,
// then gives it back; with arrive_ttl off, until session_ttl.
func TestNoShowsGiveTheirSlotsBackAtArriveTTL(t *testing.T) {
	sale := Sale{Arrivals: atOnce(300), Stay: Spread{Base: time.Minute}, Checkout: 1, NoShows: 0.3}
	on := room1(10)
	off := Variant{Label: "arrive_ttl 0", Config: configFor(10), Patch: []byte(`{"arrive_ttl": "0s"}`)}
	res := rehearse(t, sale, on, off)
	a, b := res[0].Summary, res[1].Summary
	if a.NoShows < 60 || a.NoShows > 110 || a.NoShows != b.NoShows {
		t.Fatalf("no-shows: %d and %d, want the same 30%% or so of the 290 let in from the line", a.NoShows, b.NoShows)
	}
	if minutes(a.ClearsAfter) >= minutes(b.ClearsAfter)*0.7 {
		t.Fatalf("arrive_ttl clears the line sooner: %.1f min against %.1f", minutes(a.ClearsAfter), minutes(b.ClearsAfter))
	}
}

// A rate bounds admissions in every minute, and the ETA holds to it.
func TestRateBoundsAdmissions(t *testing.T) {
	cfg := configFor(10000)
	cfg.Rate = settings.Rate{Count: 100, Per: time.Minute}
	sale := Sale{Arrivals: []Segment{{N: 3000, Over: 10 * time.Minute}}, Stay: Spread{Base: time.Minute}}
	r := rehearse(t, sale, Variant{Label: "rate 100/1m", Config: cfg})[0]
	for _, m := range r.Minutes {
		if m.Admissions > 100 {
			t.Fatalf("minute %d: %d admissions, over the rate", m.Minute, m.Admissions)
		}
	}
	if c := minutes(r.Summary.ClearsAfter); c < 29 || c > 31 {
		t.Fatalf("3,000 at 100 a minute clear in 30 min, not %.1f", c)
	}
	if e := *r.Summary.ETA.ErrorP50; e > 0.1 {
		t.Fatalf("a rate-bound line's ETA is off by %.0f%% (median)", e*100)
	}
}

// During an event's pre-queue everyone queues, is shown no ETA, and nobody is let
// in before the start.
func TestPrequeueHoldsEveryoneUntilTheStart(t *testing.T) {
	start := time.Date(2030, 11, 28, 9, 0, 0, 0, time.UTC)
	cfg := configFor(100)
	cfg.Events = []settings.Event{{Start: start, End: start.Add(2 * time.Hour), Prequeue: 10 * time.Minute}}
	sale := Sale{Arrivals: []Segment{{N: 500, Over: 10 * time.Minute}}, Stay: Spread{Base: time.Minute}, Checkout: 1}
	r := rehearse(t, sale, Variant{Label: "prequeue 10m", Config: cfg})[0]
	for _, m := range r.Minutes[:10] {
		if m.Admissions != 0 {
			t.Fatalf("minute %d of the pre-queue: %d admitted", m.Minute, m.Admissions)
		}
	}
	if r.Minutes[10].Admissions != 100 {
		t.Fatalf("at the start, capacity is let in: %d", r.Minutes[10].Admissions)
	}
	if s := r.Summary; s.ETA.Unknown != 500 || s.Admitted != 500 {
		t.Fatalf("every pre-queued visitor is shown no ETA, and gets in: %+v", s)
	}
}

// With adapt, the capacity follows the shop: up to where its p90 meets the target,
// and down when the shop slows.
func TestAdaptFollowsTheShop(t *testing.T) {
	cfg := configFor(40)
	a := capacity.Targets{Latency: 500 * time.Millisecond, Errors: capacity.DefaultErrors, Min: 10, Max: 2000}
	cfg.Adapt = &a
	sale := Sale{Arrivals: []Segment{{N: 5000, Over: 40 * time.Minute}}, Checkout: 1,
		Shop: []ShopPhase{{Servers: 100, Service: 200 * time.Millisecond}, {From: 20 * time.Minute, Servers: 100, Service: 300 * time.Millisecond}}}
	res, err := Rehearse(context.Background(), sale, []Variant{{Label: "adapt", Config: cfg}}, Options{Seed: 1, Horizon: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	// A request's p90 is its service time × 1.4 (the spread) × inside ÷ 100: 500 ms
	// at about 180 inside, and at about 120 once the shop takes 300 ms.
	before, after := r.Minutes[18].Capacity, r.Minutes[38].Capacity
	if before < 130 || before > 220 || after < 80 || after > 150 || after >= before {
		t.Fatalf("capacity %d at minute 18 and %d at minute 38, want about 180 and 120", before, after)
	}
	sh := r.Summary.Shop
	if sh == nil || sh.Target == nil || float64(*sh.Target) != 0.5 || float64(sh.P90) > 0.6 {
		t.Fatalf("the shop stays near its target: %+v", sh)
	}
}

// Every variant plays the same people: a setting that changes nothing for them
// gives the same sale.
func TestComparedSettingsPlayTheSamePeople(t *testing.T) {
	sale := Sale{Arrivals: []Segment{{N: 1500, Over: 10 * time.Minute}}, Stay: Spread{Base: 2 * time.Minute, Spread: time.Minute},
		GiveUp: []GiveUp{{Share: 0.2, After: 2 * time.Minute}}, Sleep: Sleep{Share: 0.1, For: Spread{Base: 2 * time.Minute}}, NoShows: 0.05, Checkout: 0.5}
	same := Variant{Label: "the room", Config: configFor(100), Patch: []byte(`{"message": "Thanks for waiting"}`)}
	res := rehearse(t, sale, room1(100), same, Variant{Label: "capacity 200", Config: configFor(100), Patch: []byte(`{"capacity": 200}`)})
	a, b := reportOf(t, res[0]), reportOf(t, res[1])
	if !bytes.Equal(a, b) {
		t.Fatal("a message to the line changed the sale")
	}
	for i, m := range res[2].Minutes[:10] {
		if m.Arrivals != res[0].Minutes[i].Arrivals {
			t.Fatalf("minute %d: %d arrivals against %d", i, m.Arrivals, res[0].Minutes[i].Arrivals)
		}
	}
	if res[2].Summary.WaitP90 >= res[0].Summary.WaitP90 {
		t.Fatal("twice the capacity, and no shorter a wait")
	}
}

// reportOf is r as JSON, every figure and minute of it.
func reportOf(t *testing.T, r *Result) []byte {
	t.Helper()
	r2 := *r
	r2.Label = ""
	js, err := json.Marshal(&r2)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// The hub's coarse ring (hub.go) leaves the store as the real hub's beats do: the
// same sale, to the byte.
func TestCoarseHubPlaysTheSameSale(t *testing.T) {
	sale := Sale{Arrivals: []Segment{{N: 2000, Over: 5 * time.Minute}}, Stay: Spread{Base: 2 * time.Minute, Spread: time.Minute},
		GiveUp:  []GiveUp{{Share: 0.2, After: 3 * time.Minute}},
		Sleep:   Sleep{Share: 0.2, For: Spread{Base: 90 * time.Second, Spread: 60 * time.Second}, After: Spread{Base: 2 * time.Minute, Spread: 2 * time.Minute}},
		NoShows: 0.05, Checkout: 0.5}
	for _, v := range []Variant{room1(150), {Label: "queue_ttl 20s", Config: configFor(150), Patch: []byte(`{"queue_ttl": "20s", "away_ttl": "2m"}`)}} {
		t.Run(v.Label, func(t *testing.T) {
			coarse, err := Rehearse(context.Background(), sale, []Variant{v}, Options{Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			real, err := Rehearse(context.Background(), sale, []Variant{v}, Options{Seed: 3, ring: 1})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(reportOf(t, coarse[0]), reportOf(t, real[0])) {
				t.Fatalf("the coarse ring played another sale:\n%+v\n%+v", coarse[0].Summary, real[0].Summary)
			}
			if coarse[0].Summary.GaveUp == 0 || coarse[0].Summary.NoShows == 0 {
				t.Fatal("the sale must have give-ups and no-shows to be a test")
			}
		})
	}
}

// Without a shop, a shopper's requests that do not touch its session change
// nothing the store holds: playing only those that do leaves the same sale, to the
// byte, as playing every click, whether the clicks come faster than the touches
// or slower, with sessions short or long.
func TestSparseClicksPlayTheSameSale(t *testing.T) {
	for _, tc := range []struct {
		name   string
		clicks Clicks
		patch  string
	}{
		{"a page every 3s, session_ttl 10s", Clicks{Every: 3 * time.Second, Requests: 1}, `{"session_ttl": "10s", "queue_ttl": "10s", "away_ttl": "30s", "arrive_ttl": "5s"}`},
		{"a page every 7s, session_ttl 30s", Clicks{Every: 7 * time.Second, Requests: 1}, `{"session_ttl": "30s"}`},
		{"a page every 20s, session_ttl 5m", DefaultClicks, `{"session_ttl": "5m"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sale := Sale{Arrivals: []Segment{{N: 1500, Over: 2 * time.Minute}}, Stay: Spread{Base: 3 * time.Minute, Spread: 150 * time.Second},
				GiveUp: []GiveUp{{Share: 0.2, After: 4 * time.Minute}}, Checkout: 0.5, Clicks: tc.clicks}
			v := Variant{Label: tc.name, Config: configFor(100), Patch: []byte(tc.patch)}
			sparse, err := Rehearse(context.Background(), sale, []Variant{v}, Options{Seed: 5})
			if err != nil {
				t.Fatal(err)
			}
			every, err := Rehearse(context.Background(), sale, []Variant{v}, Options{Seed: 5, everyClick: true})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(reportOf(t, sparse[0]), reportOf(t, every[0])) {
				t.Fatalf("playing only the requests that touch played another sale:\n%+v\n%+v", sparse[0].Summary, every[0].Summary)
			}
		})
	}
}

func TestRehearsalRefusesWhatItCannotPlay(t *testing.T) {
	adapting := configFor(40)
	adapting.Adapt = &capacity.Targets{Latency: time.Second, Errors: capacity.DefaultErrors, Min: 1, Max: 400}
	noCapacity := configFor(0)
	sale := Sale{Arrivals: atOnce(10)}
	for _, tc := range []struct {
		name string
		sale Sale
		vs   []Variant
		want string
	}{
		{"no room", sale, nil, "no room to rehearse"},
		{"no arrivals", Sale{}, []Variant{room1(10)}, "the sale has no arrivals"},
		{"adapt without a shop", sale, []Variant{{Label: "adapt", Config: adapting}}, `adapt: adapt follows the shop: give a model of it, such as --shop "40 at once, 250ms"`},
		{"settings the room refuses", sale, []Variant{{Label: "capacity 0", Config: noCapacity}}, "capacity 0: the room's settings: capacity"},
		{"a bad setting to compare", sale, []Variant{{Label: "bad", Config: configFor(10), Patch: []byte(`{"capacity": -4}`)}}, `bad: the settings compared, {"capacity": -4}: capacity`},
		{"an unknown setting to compare", sale, []Variant{{Label: "bad", Config: configFor(10), Patch: []byte(`{"seats": 4}`)}}, `unknown field "seats"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Rehearse(context.Background(), tc.sale, tc.vs, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestRehearsalStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Rehearse(ctx, Sale{Arrivals: atOnce(1000)}, []Variant{room1(1)}, Options{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

func TestProgressIsTold(t *testing.T) {
	var last Progress
	calls := 0
	_, err := Rehearse(context.Background(), Sale{Arrivals: []Segment{{N: 600, Over: 10 * time.Minute}}}, []Variant{room1(50)},
		Options{Progress: func(p Progress) { last, calls = p, calls+1 }})
	if err != nil {
		t.Fatal(err)
	}
	if calls < 10 || last.Arrived != 600 || last.Visitors != 600 || last.Label != "the room" || last.InLine != 0 {
		t.Fatalf("%d calls, the last %+v", calls, last)
	}
}

// People are the visitors a rehearsal plays, in the same order, with the same
// traits.
func TestPeopleAreTheRehearsalsVisitors(t *testing.T) {
	sale := Sale{Arrivals: []Segment{{N: 300, Over: time.Minute}, {N: 200, Over: 2 * time.Minute}},
		GiveUp: []GiveUp{{Share: 0.3, After: time.Minute}}, Sleep: Sleep{Share: 0.2, For: Spread{Base: time.Minute}},
		NoShows: 0.1, Checkout: 0.5}
	s := sale.withDefaults()
	r, err := playOne(context.Background(), &s, room1(50), 0, Options{Seed: 5, Horizon: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i, p := range People(sale, 5) {
		v := &r.vis[i]
		if int64(p.Arrives) != v.arrived || int64(p.Stay) != v.stay || int64(p.GivesUpAfter) != v.giveUp ||
			int64(p.SleepsAfter) != v.sleepAt || p.NoShow != v.noShow || p.Checkout != v.checkout {
			t.Fatalf("person %d: %+v, the rehearsal's %+v", i, p, v.traits)
		}
		n++
	}
	if n != 500 || len(r.vis) != 500 {
		t.Fatalf("%d people, %d visitors", n, len(r.vis))
	}
}
