package rehearse

import (
	"context"
	"testing"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/capacity"
)

// The example sale file reads, and plays against a room with adapt.
func TestTheExampleSaleFile(t *testing.T) {
	s, err := ReadSaleFile("testdata/drop.sale")
	if err != nil {
		t.Fatal(err)
	}
	// 40,000 + 20,000, then the CSV's six minutes (one of them missing, so none),
	// rounded to keep its total: 2,353.
	if got, want := s.Visitors(), 62353; got != want {
		t.Fatalf("%d visitors, want %d", got, want)
	}
	if got, want := s.Length(), time.Hour+6*time.Minute; got != want {
		t.Fatalf("arrivals over %v, want %v", got, want)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	cfg := configFor(400)
	cfg.Adapt = &capacity.Targets{Latency: 800 * time.Millisecond, Errors: capacity.DefaultErrors, Min: 20, Max: 4000}
	s.Arrivals = s.Arrivals[:1] // the rush alone: enough to see the room work
	s.Arrivals[0].N = 4000
	res, err := Rehearse(context.Background(), s, []Variant{{Label: "adapt", Config: cfg}}, Options{Seed: 1, Horizon: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if sh := res[0].Summary.Shop; sh == nil || sh.Requests == 0 || sh.Target == nil {
		t.Fatalf("the shop was not measured: %+v", res[0].Summary)
	}
}
