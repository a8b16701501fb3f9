package rehearse

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/caddy-waitingroom/caddy-waitingroom/internal/room"
)

// Help is the long help of `caddy waiting-room rehearse`.
const Help = `
Plays a sale against the waiting room's real engine (the decision, the admission
step, the estimator and the memory store that Caddy runs) on a simulated clock,
much faster than real time, and writes what happened into --out: report.html, its
charts drawn to open with no network, and report.json beside it. The terminal gets
a short summary.

The room is the site's own: its settings come from the config (--config, a
Caddyfile or JSON as caddy run reads it, with --adapter; --room when the config has
several rooms). The sale comes from the flags, or from a sale file (--sale) of one
setting a line, named as the flags are, '#' starting a comment:

    arrivals   100000 over 5m, 20000 over 55m
    stay       8m ± 3m
    give-up    30% after 10m, 10% after 30m
    checkout   60%

A flag replaces what the file says of its setting. Shares are written 30% or 0.3;
durations 90s, 5m or 1h30m; counts 5000, 250k or 1.5M.

--compare plays the same people again with other settings, given as the admin
API's PATCH body (a compared setting wins over an event's, as a PATCH does), and
draws every run on the same axes:

    caddy waiting-room rehearse --config Caddyfile --arrivals "100k over 5m" \
        --stay "5m ± 2m" --give-up "20% after 15m" --compare '{"capacity": 800}'

The same --seed plays the same sale and writes the same report, byte for byte.
`

// Command is one `caddy waiting-room rehearse`: the room as the site configures
// it, the settings to compare with it, the sale, and where the report goes. The
// module fills it in from its flags and the site's config; Run does the rest.
type Command struct {
	Room    room.Config
	Compare []string // admin API PATCH bodies, a run each
	Sale    Sale
	Seed    uint64
	Horizon time.Duration
	Out     string // the report's folder
	// Progress is where the progress bar is drawn, when it is a terminal.
	Progress io.Writer
}

// Run rehearses, writes the report and prints the summary and the report's paths
// to out.
func (c *Command) Run(ctx context.Context, out io.Writer) error {
	variants := []Variant{{Label: "as configured (" + describe(&c.Room) + ")", Config: c.Room}}
	seen := map[string]int{variants[0].Label: 1}
	for _, body := range c.Compare {
		label := patchLabel([]byte(body))
		if seen[label]++; seen[label] > 1 {
			label = fmt.Sprintf("%s (%d)", label, seen[label])
		}
		v := Variant{Label: label, Config: c.Room, Patch: []byte(body)}
		if _, err := newEngine(v, time.Time{}, 0, noTicks{}, func([]visitorID) {}); err != nil {
			// The engine's error names the body too: the flag says it once.
			return fmt.Errorf("--compare %s: %w", body, errors.Unwrap(err))
		}
		variants = append(variants, v)
	}
	opt := Options{Seed: c.Seed, Horizon: c.Horizon}
	bar := newProgressBar(c.Progress, len(variants))
	if bar != nil {
		opt.Progress = bar.update
	}
	res, err := Rehearse(ctx, c.Sale, variants, opt)
	bar.end()
	if err != nil {
		return err
	}
	rep := Report{Seed: c.Seed, Sale: c.Sale, Results: res}
	jsonPath, htmlPath, err := rep.Write(c.Out)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s\nThe report: %s\n            %s\n", rep.Text(), htmlPath, jsonPath)
	return err
}

// SaleFrom is the sale of the sale file at path (none: "") with each sale flag
// given read over it: given says whether the flag of that name was given, and its
// value.
func SaleFrom(path string, given func(name string) (string, bool)) (Sale, error) {
	var s Sale
	if path != "" {
		var err error
		if s, err = ReadSaleFile(path); err != nil {
			return Sale{}, err
		}
	}
	for _, def := range saleSettings {
		if v, ok := given(def.name); ok {
			if err := SetFlag(&s, def.name, v); err != nil {
				return Sale{}, err
			}
		}
	}
	return s, nil
}

// describe is what a room runs with, in a few words: its capacity, and its rate,
// mode, events and adapt where it has them.
func describe(cfg *room.Config) string {
	parts := []string{"capacity " + formatCount(float64(cfg.Capacity))}
	if cfg.Rate.Limits() {
		parts = append(parts, fmt.Sprintf("rate %s per %s", formatCount(float64(cfg.Rate.Count)), formatDuration(cfg.Rate.Per)))
	}
	if cfg.Mode != "" && cfg.Mode != "fifo" {
		parts = append(parts, "mode "+cfg.Mode)
	}
	if n := len(cfg.Events); n > 0 {
		parts = append(parts, fmt.Sprintf("%d event%s", n, map[bool]string{true: "s"}[n > 1]))
	}
	if cfg.Adapt != nil {
		parts = append(parts, fmt.Sprintf("adapt to %v", cfg.Adapt.Latency))
	}
	return strings.Join(parts, ", ")
}

// patchLabel names the run of a PATCH body by the settings it sets, in its order:
// {"capacity": 800, "mode": "random"} is "capacity 800, mode random", and
// {"adapt": {"latency": "400ms", "max": 3000}} is "adapt (latency 400ms, max 3000)".
// A body that is not an object is named as written (the room refuses it, with the
// admin API's message).
func patchLabel(body []byte) string {
	body = bytes.TrimSpace(body)
	if label, ok := fields(body); ok && label != "" {
		return label
	}
	return string(body)
}

// fields writes a JSON object's fields as words, "name value, …", in their order;
// false when raw is not an object.
func fields(raw []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", false
	}
	var parts []string
	for dec.More() {
		name, err := dec.Token()
		var value json.RawMessage
		if err != nil || dec.Decode(&value) != nil {
			return "", false
		}
		parts = append(parts, fmt.Sprintf("%s %s", name, valueWords(value)))
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return "", false
	}
	return strings.Join(parts, ", "), true
}

// valueWords is one field's value as words: a string unquoted, null "as
// configured", an object's fields in brackets.
func valueWords(v json.RawMessage) string {
	var s string
	switch {
	case bytes.Equal(v, []byte("null")):
		return "as configured"
	case json.Unmarshal(v, &s) == nil:
		return s
	}
	if inner, ok := fields(v); ok {
		return "(" + inner + ")"
	}
	var b bytes.Buffer
	_ = json.Compact(&b, v)
	return b.String()
}
