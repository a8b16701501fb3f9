package capacity

import (
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/queue"
)

// shop is a simulated shop that serves n requests at once in service time each: with
// more in, each takes longer in proportion (the latency grows once more than n are
// in). Its shoppers, once admitted, keep one request in flight each, and a share of
// them leave every period; a line always waits, so each period the room fills what
// the capacity allows.
type shop struct {
	n       int
	service time.Duration
	rnd     *rand.Rand
	active  int
}

// period runs one control period at capacity and returns what the room reads.
func (s *shop) period(capacity int) Reading {
	s.active -= s.active / 5 // a fifth of the sessions end
	if s.active < capacity {
		s.active = capacity // the line fills the free slots
	}
	latency := s.service
	if s.active > s.n {
		latency = s.service * time.Duration(s.active) / time.Duration(s.n)
	}
	sample := queue.Sample{Latency: make([]uint64, queue.LatencyBuckets)}
	// Each shopper's requests follow one another, so a period completes this many.
	requests := int(float64(s.active) * ControlPeriod.Seconds() / latency.Seconds())
	for range requests {
		jitter := 0.9 + 0.2*s.rnd.Float64()
		sample.Latency[queue.LatencyBucket(time.Duration(float64(latency)*jitter))]++
	}
	return ReadingOf(&sample, &queue.Stats{Active: s.active, Waiting: 1000})
}

// run steers the shop for periods from capacity and returns the capacity chosen after
// each period.
func (s *shop) run(t *testing.T, a Targets, capacity, periods int) []int {
	t.Helper()
	out := make([]int, periods)
	for i := range out {
		next, reason := Steer(a, capacity, s.period(capacity))
		if next < a.Min || next > a.Max {
			t.Fatalf("period %d: capacity %d outside [%d, %d] (%s)", i, next, a.Min, a.Max, reason)
		}
		capacity, out[i] = next, next
	}
	return out
}

// median of the last k values.
func settledAt(caps []int, k int) int {
	tail := append([]int(nil), caps[len(caps)-k:]...)
	sort.Ints(tail)
	return tail[k/2]
}

// The law settles near the shop's own capacity from any start, and follows it when
// it halves and when it doubles, never leaving [min, max]. The target is a little
// above the service time, so the knee, where the p90 meets it, is just above n.
func TestSteerFindsTheShopsCapacity(t *testing.T) {
	const n = 100
	a := Targets{Latency: 240 * time.Millisecond, Errors: 0.02, Min: 5, Max: 2000}
	near := func(t *testing.T, what string, got, want int) {
		t.Helper()
		if got < want*8/10 || got > want*14/10 {
			t.Errorf("%s: settled at %d, want near %d (within 0.8× to 1.4×)", what, got, want)
		}
	}
	for _, start := range []int{a.Min, n / 4, n, 4 * n, a.Max} {
		s := &shop{n: n, service: 200 * time.Millisecond, rnd: rand.New(rand.NewPCG(1, uint64(start)))}
		caps := s.run(t, a, start, 60)
		near(t, "from "+strconv.Itoa(start), settledAt(caps, 10), n)

		s.n = n / 2
		caps = s.run(t, a, caps[len(caps)-1], 60)
		near(t, "after n halved, from "+strconv.Itoa(start), settledAt(caps, 10), n/2)

		s.n = n
		caps = s.run(t, a, caps[len(caps)-1], 60)
		near(t, "after n doubled back, from "+strconv.Itoa(start), settledAt(caps, 10), n)
	}
}

// With too few requests to read a period, the capacity holds, whatever they say.
func TestSteerHoldsOnTooFewRequests(t *testing.T) {
	a := Targets{Latency: 100 * time.Millisecond, Errors: 0.02, Min: 1, Max: 100}
	for _, r := range []Reading{
		{Requests: MinReading - 1, P90: 10 * time.Second, Active: 50, Waiting: 10},
		{Requests: MinReading - 1, Failed: MinReading - 1, P90: time.Millisecond, Active: 50, Waiting: 10},
		{Requests: 0, Active: 50, Waiting: 10},
	} {
		if got, why := Steer(a, 50, r); got != 50 || !strings.HasPrefix(why, "held: too few requests") {
			t.Errorf("Steer(%+v) = %d, %q; want 50, held: too few requests", r, got, why)
		}
	}
}

// Each case of the law, with the reason the operator reads.
func TestSteerReasons(t *testing.T) {
	a := Targets{Latency: 800 * time.Millisecond, Errors: 0.02, Min: 10, Max: 400}
	for _, tc := range []struct {
		name     string
		capacity int
		r        Reading
		want     func(int) bool
		reason   string
	}{
		{"slow", 200, Reading{Requests: 500, P90: 1300 * time.Millisecond, Active: 200, Waiting: 5},
			func(n int) bool { return n < 200 && n >= 100 }, "lowered: p90 1.3s > 800ms"},
		{"slow from the visitors in", 200, Reading{Requests: 500, P90: 1600 * time.Millisecond, Active: 100},
			func(n int) bool { return n == 50 }, "lowered: p90 1.6s > 800ms"},
		{"failing", 200, Reading{Requests: 500, Failed: 50, P90: 100 * time.Millisecond, Active: 200, Waiting: 5},
			func(n int) bool { return n == 140 }, "lowered: errors 10% > 2%"},
		{"one failure is no trend", 200, Reading{Requests: 20, Failed: 1, P90: 100 * time.Millisecond, Active: 200, Waiting: 5},
			func(n int) bool { return n > 200 }, "raised: line waiting, targets met"},
		{"already lowered, waiting for visitors to leave", 100, Reading{Requests: 500, P90: 2 * time.Second, Active: 150, Waiting: 5},
			func(n int) bool { return n == 100 }, "held: 50 in above capacity 100"},
		{"at min", 10, Reading{Requests: 500, P90: 2 * time.Second, Active: 10, Waiting: 5},
			func(n int) bool { return n == 10 }, "held at min: p90 2s > 800ms"},
		{"line waiting, targets met", 200, Reading{Requests: 500, P90: 100 * time.Millisecond, Active: 200, Waiting: 5},
			func(n int) bool { return n > 200 && n <= 240 }, "raised: line waiting, targets met"},
		{"at max", 400, Reading{Requests: 500, P90: 100 * time.Millisecond, Active: 400, Waiting: 5},
			func(n int) bool { return n == 400 }, "held at max"},
		{"no line", 200, Reading{Requests: 500, P90: 100 * time.Millisecond, Active: 200},
			func(n int) bool { return n == 200 }, "held: capacity is not the limit"},
		{"room not full", 200, Reading{Requests: 500, P90: 100 * time.Millisecond, Active: 150, Waiting: 5},
			func(n int) bool { return n == 200 }, "held: capacity is not the limit"},
		{"a rate limits", 200, Reading{Requests: 500, P90: 100 * time.Millisecond, Active: 200, Waiting: 5, Limited: true},
			func(n int) bool { return n == 200 }, "held: capacity is not the limit"},
		{"outside the bounds", 1000, Reading{Requests: 500, P90: 100 * time.Millisecond, Active: 0},
			func(n int) bool { return n == 400 }, "held"},
	} {
		got, why := Steer(a, tc.capacity, tc.r)
		if !tc.want(got) || !strings.HasPrefix(why, tc.reason) {
			t.Errorf("%s: Steer = %d, %q; want a capacity that fits and a reason starting %q", tc.name, got, why, tc.reason)
		}
	}
}

// The reasons print their figures as a person writes them, whatever the float's
// rounding made of them.
func TestReasonsReadAsWritten(t *testing.T) {
	a := Targets{Latency: time.Second, Errors: 0.05, Min: 1, Max: 100}
	_, reason := Steer(a, 50, Reading{Requests: 1000, Failed: 277, P90: 10 * time.Millisecond, Active: 50, Waiting: 10})
	if want := "lowered: errors 27.7% > 5%"; reason != want {
		t.Fatalf("reason %q, want %q", reason, want)
	}
	for share, want := range map[float64]string{0.005: "0.5%", 0.277: "27.7%", 0.07: "7%", 0.0123: "1.23%", 1: "100%"} {
		if got := FormatShare(share); got != want {
			t.Errorf("FormatShare(%v) = %q, want %q", share, got, want)
		}
		if back, err := ParseShare(want); err != nil || FormatShare(back) != want {
			t.Errorf("%q read back as %v, written %q (%v)", want, back, FormatShare(back), err)
		}
	}
}
