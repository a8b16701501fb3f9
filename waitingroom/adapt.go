package waitingroom

import (
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/capacity"
)

// Adapt turns on the adaptive capacity: the room measures, for every request it lets
// through, the shop's time to first byte (from when the shop had the whole request)
// and whether it failed, and sets its capacity to keep both under their targets,
// reading at most 8 of each visitor's requests a control period, so that one client
// weighs as one visitor. What Caddy or the client did (a body that could not be read,
// a client gone) is not counted. The configured capacity is where it starts. See
// docs/adaptive-capacity.md.
type Adapt struct {
	// Latency is the target for the 90th percentile of the shop's time to first
	// byte, such as "800ms". Required.
	Latency caddy.Duration `json:"latency,omitempty"`
	// Errors is the target for the share of admitted requests that failed (a 5xx,
	// or an error from the next handler), as a percentage such as "2%". Default: 5%.
	Errors string `json:"errors,omitempty"`
	// Min and Max bound the capacity it sets. Defaults: 1, and 10 × capacity.
	Min int `json:"min,omitempty"`
	Max int `json:"max,omitempty"`
}

// engine is adapt as the room takes it, for a room of that capacity, defaults filled
// in and checked.
func (a *Adapt) engine(roomCapacity int) (*capacity.Targets, error) {
	out := capacity.Targets{Latency: time.Duration(a.Latency), Errors: capacity.DefaultErrors, Min: a.Min, Max: a.Max}
	if a.Errors != "" {
		share, err := capacity.ParseShare(a.Errors)
		if err != nil {
			return nil, fmt.Errorf("adapt errors: %w", err)
		}
		out.Errors = share
	}
	if a.Min < 0 || a.Max < 0 {
		return nil, fmt.Errorf("adapt min and max must not be negative, got %d and %d", a.Min, a.Max)
	}
	out = out.WithDefaults(roomCapacity)
	if err := capacity.Check(out, roomCapacity); err != nil {
		return nil, err
	}
	return &out, nil
}

// parseAdapt reads the adapt block. Each option's error carries its line; what
// holds only with the room's capacity, which may come after the block, is checked by
// checkAdapt.
//
//	adapt {
//		latency <duration>
//		errors  <percent>
//		min     <n>
//		max     <n>
//	}
func parseAdapt(d *caddyfile.Dispenser) (*Adapt, error) {
	if d.NextArg() {
		return nil, d.Errf("adapt takes a block, not %q: adapt { latency 800ms }", d.Val())
	}
	a := new(Adapt)
	block := d.Nesting()
	seen := map[string]bool{}
	for d.NextBlock(block) {
		sub := d.Val()
		if seen[sub] {
			return nil, d.Errf("duplicate adapt option %q", sub)
		}
		seen[sub] = true
		var err error
		switch sub {
		case "latency":
			a.Latency, err = positiveDuration(d, "adapt latency")
			if err == nil && time.Duration(a.Latency) > 30*24*time.Hour {
				err = d.Errf("adapt latency must be at most 720h, got %v", time.Duration(a.Latency))
			}
		case "errors":
			a.Errors, err = oneArg(d)
			if err == nil {
				var share float64
				if share, err = capacity.ParseShare(a.Errors); err != nil {
					err = d.Errf("adapt errors: %v", err)
				} else if share < 0 || share > 1 {
					err = d.Errf("adapt errors must be a percentage from 0%% to 100%%, got %s", a.Errors)
				}
			}
		case "min":
			a.Min, err = positiveInt(d, "adapt min")
		case "max":
			a.Max, err = positiveInt(d, "adapt max")
		default:
			return nil, d.Errf("unrecognized adapt option %q (the options are latency, errors, min and max)", sub)
		}
		if err != nil {
			return nil, err
		}
	}
	if a.Latency == 0 {
		return nil, d.Err("adapt needs a latency target (add `latency <duration>`, such as latency 800ms, to the block)")
	}
	return a, nil
}

// checkAdapt checks the adapt block against the room's capacity, which the block may
// come before; the error points at the block's line, at, as the parser's errors do.
func checkAdapt(a *Adapt, capacity int, at string) error {
	if _, err := a.engine(capacity); err != nil {
		return fmt.Errorf("%w, at %s", err, at)
	}
	return nil
}
