package rehearse

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// A sale is read from flags or from a sale file, which share the names: the file's
// line `give-up 30% after 10m` is the flag `--give-up "30% after 10m"`. Each setting
// is defined once, in saleSettings: its name, what it takes, and how it is read.
//
// The sale file, one setting a line, `#` to the end of a line is a comment:
//
//	# Tuesday's drop: the rush, then a tail.
//	arrivals     100000 over 5m, 20000 over 55m
//	stay         8m ± 3m
//	give-up      30% after 10m
//	give-up      10% after 30m
//	sleep        10% for 3m
//	no-shows     2%
//	checkout     60%
//	clicks       every 20s, 6 requests
//	shop         40 at once, 250ms
//	shop         40 at once, 600ms from 20m
//
// arrivals, arrivals-csv, give-up and shop may be given on several lines, which add
// up in their order (arrivals one segment after the other, the shop's phases by
// their start); any other setting given twice is an error. A flag replaces what the
// file said of its setting.

// saleSetting is one setting of a sale.
type saleSetting struct {
	name string
	// what it says, as --help shows it.
	what string
	// syntax is what it takes, as --help and errors show it.
	syntax string
	// many says the file may give it on several lines, which add up.
	many bool
	// clear forgets what was read of it (a flag replaces the file's).
	clear func(s *Sale)
	// add reads value into s; dir is where a file it names is looked for.
	add func(s *Sale, value, dir string) error
}

var saleSettings = []saleSetting{
	{name: "arrivals", what: "Who arrives when, segment after segment, spread evenly in each", syntax: `"<n> over <duration>, <n> over <duration>, …"`, many: true,
		clear: func(s *Sale) { s.Arrivals = nil },
		add: func(s *Sale, v, _ string) error {
			segs, err := ParseArrivals(v)
			s.Arrivals = append(s.Arrivals, segs...)
			return err
		}},
	{name: "arrivals-csv", what: "Arrivals per minute from a CSV file (one column, or a time and a count)", syntax: "FILE", many: true,
		clear: func(s *Sale) { s.Arrivals = nil },
		add: func(s *Sale, v, dir string) error {
			segs, err := ReadArrivalsCSV(resolve(dir, strings.TrimSpace(v)))
			s.Arrivals = append(s.Arrivals, segs...)
			return err
		}},
	{name: "start", what: "When the first arrival comes, for a room with events", syntax: "RFC 3339 time (default: the room's first event's opening)",
		clear: func(s *Sale) { s.Start = time.Time{} },
		add: func(s *Sale, v, _ string) error {
			t, err := time.Parse(time.RFC3339, strings.TrimSpace(v))
			if err != nil {
				return fmt.Errorf("want a time such as 2030-11-28T09:00:00+09:00, got %q", strings.TrimSpace(v))
			}
			s.Start = t
			return nil
		}},
	{name: "stay", what: "How long an admitted shopper keeps making requests (default 5m ± 2m)", syntax: `"<duration>" or "<duration> ± <duration>"`,
		clear: func(s *Sale) { s.Stay = Spread{} },
		add: func(s *Sale, v, _ string) (err error) {
			s.Stay, err = parseSpread(v, true)
			return err
		}},
	{name: "give-up", what: "The share of the people still waiting who leave the line for good at that wait", syntax: `"<share> after <duration>, …"`, many: true,
		clear: func(s *Sale) { s.GiveUp = nil },
		add: func(s *Sale, v, _ string) error {
			g, err := ParseGiveUp(v)
			s.GiveUp = append(s.GiveUp, g...)
			return err
		}},
	{name: "sleep", what: "The share of waiting phones that sleep once, and for how long", syntax: `"<share> for <duration>[ ± <duration>][ after <duration>[ ± <duration>]]"`,
		clear: func(s *Sale) { s.Sleep = Sleep{} },
		add: func(s *Sale, v, _ string) (err error) {
			s.Sleep, err = ParseSleep(v)
			return err
		}},
	{name: "no-shows", what: "The share whose turn comes while they are away for good", syntax: `"<share>"`,
		clear: func(s *Sale) { s.NoShows = 0 },
		add: func(s *Sale, v, _ string) (err error) {
			s.NoShows, err = parseShare(v)
			return err
		}},
	{name: "checkout", what: "The share of shoppers whose last request the shop answers with a revoke", syntax: `"<share>"`,
		clear: func(s *Sale) { s.Checkout = 0 },
		add: func(s *Sale, v, _ string) (err error) {
			s.Checkout, err = parseShare(v)
			return err
		}},
	{name: "clicks", what: "A shopper's pace, and the requests each page brings (default every 20s, 6 requests)", syntax: `"every <duration>[, <n> requests]"`,
		clear: func(s *Sale) { s.Clicks = Clicks{} },
		add: func(s *Sale, v, _ string) (err error) {
			s.Clicks, err = ParseClicks(v)
			return err
		}},
	{name: "shop", what: "The shop, for adapt: how many it serves at once, in what time, from when", syntax: `"<n> at once, <duration>[ from <duration>]; …"`, many: true,
		clear: func(s *Sale) { s.Shop = nil },
		add: func(s *Sale, v, _ string) error {
			for part := range strings.SplitSeq(v, ";") {
				ph, err := ParseShopPhase(part)
				if err != nil {
					return err
				}
				s.Shop = append(s.Shop, ph)
			}
			return nil
		}},
}

// SaleSettings are the names of a sale's settings, each a flag of its own and a
// line of the sale file, with what each says and takes, as --help shows it.
func SaleSettings() [][2]string {
	out := make([][2]string, len(saleSettings))
	for i, def := range saleSettings {
		out[i] = [2]string{def.name, def.what + ": " + def.syntax}
	}
	return out
}

func saleSettingNamed(name string) (saleSetting, bool) {
	for _, def := range saleSettings {
		if def.name == name {
			return def, true
		}
	}
	return saleSetting{}, false
}

// SetFlag reads the flag --name's value into s, in place of what s held of it.
func SetFlag(s *Sale, name, value string) error {
	def, ok := saleSettingNamed(name)
	if !ok {
		return fmt.Errorf("--%s is no setting of a sale", name)
	}
	def.clear(s)
	if err := def.add(s, value, ""); err != nil {
		return fmt.Errorf("--%s %q: %w", name, value, err)
	}
	return nil
}

// ReadSaleFile reads the sale file at path (see saleSettings for the format).
func ReadSaleFile(path string) (Sale, error) {
	f, err := os.Open(path)
	if err != nil {
		return Sale{}, fmt.Errorf("reading the sale: %w", err)
	}
	defer f.Close()
	return ParseSale(f, path, filepath.Dir(path))
}

// ParseSale reads a sale file from r; name is what its errors call it, and dir
// where the files it names are looked for.
func ParseSale(r io.Reader, name, dir string) (Sale, error) {
	var s Sale
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		key, value := line, ""
		if i := strings.IndexFunc(line, unicode.IsSpace); i >= 0 {
			key, value = line[:i], line[i:]
		}
		def, ok := saleSettingNamed(key)
		if !ok {
			return Sale{}, fmt.Errorf("%s:%d: unknown setting %q (the settings are: %s)", name, n, key, settingNames())
		}
		if first, again := seen[key]; again && !def.many {
			return Sale{}, fmt.Errorf("%s:%d: %s given twice (first at line %d)", name, n, key, first)
		}
		seen[key] = n
		if strings.TrimSpace(value) == "" {
			return Sale{}, fmt.Errorf("%s:%d: %s wants %s", name, n, key, def.syntax)
		}
		if err := def.add(&s, value, dir); err != nil {
			return Sale{}, fmt.Errorf("%s:%d: %s: %w", name, n, key, err)
		}
	}
	if err := sc.Err(); err != nil {
		return Sale{}, fmt.Errorf("reading %s: %w", name, err)
	}
	return s, nil
}

func settingNames() string {
	names := make([]string, len(saleSettings))
	for i, def := range saleSettings {
		names[i] = def.name
	}
	return strings.Join(names, ", ")
}

func resolve(dir, path string) string {
	if dir == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}

// ParseArrivals reads "<n> over <duration>, <n> over <duration>, …".
func ParseArrivals(v string) ([]Segment, error) {
	var segs []Segment
	for i, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		ns, ds, ok := strings.Cut(part, " over ")
		if !ok {
			return nil, fmt.Errorf("segment %d: want \"<n> over <duration>\", got %q", i+1, part)
		}
		n, err := parseCount(ns)
		if err != nil {
			return nil, fmt.Errorf("segment %d: %w", i+1, err)
		}
		d, err := parseDuration(ds)
		if err == nil && d == 0 {
			err = errors.New("a segment must last more than 0s")
		}
		if err != nil {
			return nil, fmt.Errorf("segment %d: %w", i+1, err)
		}
		segs = append(segs, Segment{N: n, Over: d})
	}
	return segs, nil
}

// ParseGiveUp reads "<share> after <duration>, …".
func ParseGiveUp(v string) ([]GiveUp, error) {
	var out []GiveUp
	for part := range strings.SplitSeq(v, ",") {
		part = strings.TrimSpace(part)
		ss, ds, ok := strings.Cut(part, " after ")
		if !ok {
			return nil, fmt.Errorf("want \"<share> after <duration>\", got %q", part)
		}
		share, err := parseShare(ss)
		if err != nil {
			return nil, err
		}
		d, err := parseDuration(ds)
		if err != nil {
			return nil, err
		}
		out = append(out, GiveUp{Share: share, After: d})
	}
	return out, nil
}

// ParseSleep reads "<share> for <duration>[ ± <duration>][ after <duration>[ ± <duration>]]".
func ParseSleep(v string) (Sleep, error) {
	ss, rest, ok := strings.Cut(strings.TrimSpace(v), " for ")
	if !ok {
		return Sleep{}, fmt.Errorf("want \"<share> for <duration>\", got %q", strings.TrimSpace(v))
	}
	share, err := parseShare(ss)
	if err != nil {
		return Sleep{}, err
	}
	fs, as, hasAfter := strings.Cut(rest, " after ")
	sl := Sleep{Share: share}
	if sl.For, err = parseSpread(fs, true); err != nil {
		return Sleep{}, err
	}
	if hasAfter {
		if sl.After, err = parseSpread(as, false); err != nil {
			return Sleep{}, err
		}
	}
	return sl, nil
}

// ParseClicks reads "every <duration>[, <n> requests]".
func ParseClicks(v string) (Clicks, error) {
	v = strings.TrimSpace(v)
	every, reqs, hasReqs := strings.Cut(v, ",")
	ds, ok := strings.CutPrefix(strings.TrimSpace(every), "every ")
	if !ok {
		return Clicks{}, fmt.Errorf("want \"every <duration>[, <n> requests]\", got %q", v)
	}
	d, err := parseDuration(ds)
	if err == nil && d < time.Second {
		err = fmt.Errorf("a shopper clicks at most every second, got %v", d)
	}
	if err != nil {
		return Clicks{}, err
	}
	c := Clicks{Every: d, Requests: 1}
	if hasReqs {
		ns, ok := strings.CutSuffix(strings.TrimSpace(reqs), " requests")
		if !ok {
			ns, ok = strings.CutSuffix(strings.TrimSpace(reqs), " request")
		}
		if !ok {
			return Clicks{}, fmt.Errorf("want \"<n> requests\" after the comma, got %q", strings.TrimSpace(reqs))
		}
		if c.Requests, err = parseCount(ns); err != nil {
			return Clicks{}, err
		}
		if c.Requests < 1 || c.Requests > 100 {
			return Clicks{}, fmt.Errorf("a page brings 1 to 100 requests, got %d", c.Requests)
		}
	}
	return c, nil
}

// ParseShopPhase reads "<n> at once, <duration>[ from <duration>]".
func ParseShopPhase(v string) (ShopPhase, error) {
	v = strings.TrimSpace(v)
	ns, rest, ok := strings.Cut(v, " at once,")
	if !ok {
		return ShopPhase{}, fmt.Errorf("want \"<n> at once, <service time>[ from <duration>]\", got %q", v)
	}
	n, err := parseCount(ns)
	if err == nil && n == 0 {
		err = errors.New("a shop serves at least 1 at once")
	}
	if err != nil {
		return ShopPhase{}, err
	}
	svc, from, hasFrom := strings.Cut(rest, " from ")
	ph := ShopPhase{Servers: n}
	if ph.Service, err = parseDuration(svc); err == nil && ph.Service == 0 {
		err = errors.New("the shop's service time must be more than 0s")
	}
	if err != nil {
		return ShopPhase{}, err
	}
	if hasFrom {
		if ph.From, err = parseDuration(from); err != nil {
			return ShopPhase{}, err
		}
	}
	return ph, nil
}

// parseSpread reads "<duration>" or "<duration> ± <duration>" (also "+-"); positive
// says the drawn durations must all be above 0.
func parseSpread(v string, positive bool) (Spread, error) {
	v = strings.TrimSpace(v)
	bs, ss, spread := strings.Cut(v, "±")
	if !spread {
		bs, ss, spread = strings.Cut(v, "+-")
	}
	var sp Spread
	var err error
	if sp.Base, err = parseDuration(bs); err != nil {
		return Spread{}, err
	}
	if spread {
		if sp.Spread, err = parseDuration(ss); err != nil {
			return Spread{}, err
		}
	}
	switch {
	case positive && sp.Spread >= sp.Base:
		return Spread{}, fmt.Errorf("%v ± %v reaches 0s or below: the spread must be less than the duration", sp.Base, sp.Spread)
	case sp.Spread > sp.Base:
		return Spread{}, fmt.Errorf("%v ± %v reaches below 0s: the spread must be at most the duration", sp.Base, sp.Spread)
	}
	return sp, nil
}

// parseDuration reads a non-negative Go duration ("90s", "1h30m").
func parseDuration(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return 0, fmt.Errorf("want a duration such as 90s, 5m or 1h30m, got %q", v)
	case d < 0:
		return 0, fmt.Errorf("a duration cannot be negative, got %s", v)
	}
	return d, nil
}

// parseShare reads a share as "30%" or as "0.3".
func parseShare(v string) (float64, error) {
	v = strings.TrimSpace(v)
	num, pct := strings.CutSuffix(v, "%")
	f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("want a share such as 30%% or 0.3, got %q", v)
	}
	if pct {
		f /= 100
	}
	switch {
	case f < 0:
		return 0, fmt.Errorf("a share cannot be negative, got %s", v)
	case f > 1 && pct:
		return 0, fmt.Errorf("a share cannot be over 100%%, got %s", v)
	case f > 1:
		return 0, fmt.Errorf("a share cannot be over 1 (100%%), got %s; for a percentage write %s%%", v, v)
	}
	return f, nil
}

// parseCount reads a number of people: "250000", "250_000", "250k", "1.5M".
func parseCount(v string) (int, error) {
	v = strings.TrimSpace(v)
	num, mult := strings.ReplaceAll(v, "_", ""), 1.0
	switch {
	case strings.HasSuffix(num, "k"):
		num, mult = num[:len(num)-1], 1e3
	case strings.HasSuffix(num, "M"):
		num, mult = num[:len(num)-1], 1e6
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || strings.ContainsAny(num, "eEpPxX") {
		return 0, fmt.Errorf("want a number such as 5000, 250k or 1.5M, got %q", v)
	}
	f *= mult
	switch {
	case f < 0:
		return 0, fmt.Errorf("a number of people cannot be negative, got %s", v)
	case f != math.Trunc(f):
		return 0, fmt.Errorf("a number of people is whole, got %s", v)
	case f > MaxVisitors:
		return 0, fmt.Errorf("%s is more than a rehearsal takes (%d)", v, MaxVisitors)
	}
	return int(f), nil
}
