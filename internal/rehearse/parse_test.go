package rehearse

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestFlagsReadTheSale(t *testing.T) {
	for _, tc := range []struct {
		flag, value string
		want        Sale
	}{
		{"arrivals", "100000 over 5m, 20000 over 55m", Sale{Arrivals: []Segment{{100000, 5 * time.Minute}, {20000, 55 * time.Minute}}}},
		{"arrivals", "250k over 1h30m", Sale{Arrivals: []Segment{{250000, 90 * time.Minute}}}},
		{"arrivals", "1.5M over 2h, 0 over 10m, 1_000 over 1m", Sale{Arrivals: []Segment{{1500000, 2 * time.Hour}, {0, 10 * time.Minute}, {1000, time.Minute}}}},
		{"stay", "8m", Sale{Stay: Spread{Base: 8 * time.Minute}}},
		{"stay", "8m ± 3m", Sale{Stay: Spread{Base: 8 * time.Minute, Spread: 3 * time.Minute}}},
		{"stay", "8m+-3m", Sale{Stay: Spread{Base: 8 * time.Minute, Spread: 3 * time.Minute}}},
		{"give-up", "30% after 10m", Sale{GiveUp: []GiveUp{{0.3, 10 * time.Minute}}}},
		{"give-up", "0.3 after 10m, 10% after 30m", Sale{GiveUp: []GiveUp{{0.3, 10 * time.Minute}, {0.1, 30 * time.Minute}}}},
		{"sleep", "10% for 3m", Sale{Sleep: Sleep{Share: 0.1, For: Spread{Base: 3 * time.Minute}}}},
		{"sleep", "10% for 3m ± 1m after 2m ± 2m", Sale{Sleep: Sleep{Share: 0.1, For: Spread{3 * time.Minute, time.Minute}, After: Spread{2 * time.Minute, 2 * time.Minute}}}},
		{"no-shows", "2%", Sale{NoShows: 0.02}},
		{"checkout", "100%", Sale{Checkout: 1}},
		{"clicks", "every 20s", Sale{Clicks: Clicks{Every: 20 * time.Second, Requests: 1}}},
		{"clicks", "every 20s, 6 requests", Sale{Clicks: Clicks{Every: 20 * time.Second, Requests: 6}}},
		{"shop", "40 at once, 250ms", Sale{Shop: []ShopPhase{{Servers: 40, Service: 250 * time.Millisecond}}}},
		{"shop", "40 at once, 250ms; 40 at once, 600ms from 20m", Sale{Shop: []ShopPhase{{Servers: 40, Service: 250 * time.Millisecond}, {From: 20 * time.Minute, Servers: 40, Service: 600 * time.Millisecond}}}},
		{"start", "2030-11-28T09:00:00+09:00", Sale{Start: time.Date(2030, 11, 28, 0, 0, 0, 0, time.UTC)}},
	} {
		t.Run(tc.flag+" "+tc.value, func(t *testing.T) {
			var s Sale
			if err := SetFlag(&s, tc.flag, tc.value); err != nil {
				t.Fatal(err)
			}
			if !s.Start.Equal(tc.want.Start) {
				t.Fatalf("start %v, want %v", s.Start, tc.want.Start)
			}
			s.Start, tc.want.Start = time.Time{}, time.Time{}
			if !reflect.DeepEqual(s, tc.want) {
				t.Fatalf("got %+v\nwant %+v", s, tc.want)
			}
		})
	}
}

// Each bad value gets an error that names the flag and says what is wrong.
func TestBadFlagsAreRefusedByName(t *testing.T) {
	for _, tc := range []struct {
		flag, value, want string
	}{
		{"arrivals", "lots over 5m", `--arrivals "lots over 5m": segment 1: want a number such as 5000, 250k or 1.5M, got "lots"`},
		{"arrivals", "-100 over 5m", `segment 1: a number of people cannot be negative, got -100`},
		{"arrivals", "100 over -5m", `segment 1: a duration cannot be negative, got -5m`},
		{"arrivals", "100 over five minutes", `segment 1: want a duration such as 90s, 5m or 1h30m, got "five minutes"`},
		{"arrivals", "100 over 5m, 200", `segment 2: want "<n> over <duration>", got "200"`},
		{"arrivals", "100 over 0s", `segment 1: a segment must last more than 0s`},
		{"arrivals", "2.5 over 1m", `a number of people is whole, got 2.5`},
		{"arrivals", "30M over 1h", `30M is more than a rehearsal takes (10000000)`},
		{"arrivals", "1e3 over 1m", `want a number such as 5000, 250k or 1.5M, got "1e3"`},
		{"stay", "-5m", `--stay "-5m": a duration cannot be negative, got -5m`},
		{"stay", "5m ± 5m", `5m0s ± 5m0s reaches 0s or below`},
		{"stay", "5 minutes", `want a duration such as 90s, 5m or 1h30m, got "5 minutes"`},
		{"give-up", "130% after 10m", `--give-up "130% after 10m": a share cannot be over 100%, got 130%`},
		{"give-up", "1.3 after 10m", `a share cannot be over 1 (100%), got 1.3; for a percentage write 1.3%`},
		{"give-up", "-30% after 10m", `a share cannot be negative, got -30%`},
		{"give-up", "30% after -10m", `a duration cannot be negative, got -10m`},
		{"give-up", "30% at 10m", `want "<share> after <duration>", got "30% at 10m"`},
		{"give-up", "many after 10m", `want a share such as 30% or 0.3, got "many"`},
		{"sleep", "10%", `want "<share> for <duration>", got "10%"`},
		{"sleep", "110% for 3m", `a share cannot be over 100%, got 110%`},
		{"sleep", "10% for 0s", `0s ± 0s reaches 0s or below`},
		{"sleep", "10% for 3m after 1m ± 2m", `1m0s ± 2m0s reaches below 0s`},
		{"no-shows", "101%", `--no-shows "101%": a share cannot be over 100%, got 101%`},
		{"no-shows", "-1%", `a share cannot be negative, got -1%`},
		{"checkout", "half", `want a share such as 30% or 0.3, got "half"`},
		{"clicks", "20s", `want "every <duration>[, <n> requests]", got "20s"`},
		{"clicks", "every 100ms", `a shopper clicks at most every second, got 100ms`},
		{"clicks", "every 20s, 0 requests", `a page brings 1 to 100 requests, got 0`},
		{"clicks", "every 20s, six", `want "<n> requests" after the comma, got "six"`},
		{"shop", "40, 250ms", `want "<n> at once, <service time>[ from <duration>]", got "40, 250ms"`},
		{"shop", "0 at once, 250ms", `a shop serves at least 1 at once`},
		{"shop", "-4 at once, 250ms", `a number of people cannot be negative, got -4`},
		{"shop", "40 at once, 0s", `the shop's service time must be more than 0s`},
		{"shop", "40 at once, 250ms from -1m", `a duration cannot be negative, got -1m`},
		{"start", "tomorrow", `want a time such as 2030-11-28T09:00:00+09:00, got "tomorrow"`},
		{"capacity", "400", `--capacity is no setting of a sale`},
	} {
		t.Run(tc.flag+" "+tc.value, func(t *testing.T) {
			var s Sale
			err := SetFlag(&s, tc.flag, tc.value)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("--%s %q: got error %v, want one saying %q", tc.flag, tc.value, err, tc.want)
			}
		})
	}
}

// A flag replaces what the sale file said of its setting.
func TestFlagReplacesTheFilesSetting(t *testing.T) {
	s, err := ParseSale(strings.NewReader("arrivals 100 over 1m\narrivals 200 over 1m\ngive-up 10% after 1m\n"), "sale", "")
	if err != nil {
		t.Fatal(err)
	}
	if s.Visitors() != 300 {
		t.Fatalf("two arrivals lines add up: %d visitors, want 300", s.Visitors())
	}
	if err := SetFlag(&s, "arrivals", "5 over 1m"); err != nil {
		t.Fatal(err)
	}
	if s.Visitors() != 5 || len(s.GiveUp) != 1 {
		t.Fatalf("after --arrivals: %+v", s)
	}
}

func TestSaleFileReadsEverySetting(t *testing.T) {
	dir := t.TempDir()
	csv := "minute,arrivals\n0,100\n1,50\n"
	if err := os.WriteFile(filepath.Join(dir, "last.csv"), []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	file := `# Tuesday's drop
arrivals     100000 over 5m, 20000 over 55m   # the rush, then a tail
arrivals-csv last.csv
stay         8m ± 3m
give-up      30% after 10m
give-up      10% after 30m
sleep        10% for 3m
no-shows     2%
checkout     60%
clicks       every 20s, 6 requests
shop         40 at once, 250ms
shop	40 at once, 600ms from 20m
start        2030-11-28T09:00:00+09:00
`
	path := filepath.Join(dir, "sale")
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := ReadSaleFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Sale{
		Arrivals: []Segment{{100000, 5 * time.Minute}, {20000, 55 * time.Minute}, {100, time.Minute}, {50, time.Minute}},
		Start:    s.Start,
		Stay:     Spread{8 * time.Minute, 3 * time.Minute},
		GiveUp:   []GiveUp{{0.3, 10 * time.Minute}, {0.1, 30 * time.Minute}},
		Sleep:    Sleep{Share: 0.1, For: Spread{Base: 3 * time.Minute}},
		NoShows:  0.02, Checkout: 0.6,
		Clicks: Clicks{20 * time.Second, 6},
		Shop:   []ShopPhase{{0, 40, 250 * time.Millisecond}, {20 * time.Minute, 40, 600 * time.Millisecond}},
	}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("got %+v\nwant %+v", s, want)
	}
	if !s.Start.Equal(time.Date(2030, 11, 28, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("start %v", s.Start)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

// A bad line of the sale file is named by the file and its number.
func TestSaleFileErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
	}{
		{"unknown setting", "arrivals 10 over 1m\ncapacity 400\n", `sale:2: unknown setting "capacity" (the settings are: arrivals, arrivals-csv, start, stay, give-up, sleep, no-shows, checkout, clicks, shop)`},
		{"negative", "# c\n\narrivals -10 over 1m\n", `sale:3: arrivals: segment 1: a number of people cannot be negative, got -10`},
		{"share over 100%", "arrivals 10 over 1m\ngive-up 130% after 10m\n", `sale:2: give-up: a share cannot be over 100%, got 130%`},
		{"bad duration", "arrivals 10 over 1m\nstay 5 mins\n", `sale:2: stay: want a duration such as 90s, 5m or 1h30m, got "5 mins"`},
		{"twice", "stay 5m\narrivals 10 over 1m\nstay 6m\n", `sale:3: stay given twice (first at line 1)`},
		{"no value", "arrivals\n", `sale:1: arrivals wants "<n> over <duration>, <n> over <duration>, …"`},
		{"missing csv", "arrivals-csv nowhere.csv\n", `sale:1: arrivals-csv: reading arrivals: open nowhere.csv`},
		{"no-shows over 100%", "no-shows 150%\n", `sale:1: no-shows: a share cannot be over 100%, got 150%`},
		{"shop", "shop 40 at once, 250ms from soon\n", `sale:1: shop: want a duration such as 90s, 5m or 1h30m, got "soon"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSale(strings.NewReader(tc.file), "sale", "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestSaleCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		sale Sale
		want string
	}{
		{"no arrivals", Sale{}, "the sale has no arrivals"},
		{"nobody", Sale{Arrivals: []Segment{{0, time.Minute}}}, "the sale has no arrivals"},
		{"too many", Sale{Arrivals: []Segment{{MaxVisitors, time.Hour}, {1, time.Minute}}}, "a rehearsal takes at most"},
		{"shop out of order", Sale{Arrivals: []Segment{{1, time.Minute}}, Shop: []ShopPhase{{0, 4, time.Second}, {20 * time.Minute, 4, time.Second}, {10 * time.Minute, 4, time.Second}}}, "must start in order"},
		{"shop starts late", Sale{Arrivals: []Segment{{1, time.Minute}}, Shop: []ShopPhase{{10 * time.Minute, 4, time.Second}}}, "must start at the sale's start"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.sale.Check()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestArrivalsCSV(t *testing.T) {
	for _, tc := range []struct {
		name, csv string
		want      []int
	}{
		{"one column", "120\n80\n0\n5\n", []int{120, 80, 0, 5}},
		{"header", "arrivals\n120\n80\n", []int{120, 80}},
		{"Prometheus", "timestamp,value\n1700000000,10.4\n1700000060,10.4\n1700000120,10.4\n", []int{10, 11, 10}},
		{"a missing minute", "1700000000,5\n1700000120,7\n", []int{5, 0, 7}},
		{"milliseconds", "1700000000.000,5\n1700000060.001,7\n", []int{5, 7}},
		{"RFC 3339", "2030-11-28T09:00:00Z,3\n2030-11-28T09:01:00Z,4\n", []int{3, 4}},
		{"minute numbers", "minute,arrivals\n0,3\n1,4\n3,1\n", []int{3, 4, 0, 1}},
		{"comments and blanks", "# last sale\n3\n\n4\n", []int{3, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			segs, err := ParseArrivalsCSV(strings.NewReader(tc.csv), "a.csv")
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, s := range segs {
				if s.Over != time.Minute {
					t.Fatalf("a row is a minute, got %v", s.Over)
				}
				got = append(got, s.N)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBadArrivalsCSVNamesTheLine(t *testing.T) {
	for _, tc := range []struct {
		name, csv, want string
	}{
		{"negative", "10\n-4\n", "a.csv:2: arrivals cannot be negative, got -4"},
		{"not a number", "minute,arrivals\n0,10\n1,lots\n", `a.csv:3: want a number of arrivals, got "lots"`},
		{"NaN", "1700000000,NaN\n", `a.csv:1: want a number of arrivals, got "NaN"`},
		{"three columns", "1,2,3\n", "a.csv:1: want one column (arrivals) or two (time, arrivals), got 3"},
		{"out of order", "1700000060,1\n1700000000,1\n", "a.csv:2: the rows must be whole minutes apart and in order"},
		{"not a minute", "1700000000,1\n1700000015,1\n", "a.csv:2: the rows must be whole minutes apart and in order; this one is 15s after"},
		{"bad time", "time,arrivals\n1700000000,1\nnoon,2\n", `a.csv:3: want a time as Unix seconds, RFC 3339 or a minute's number, got "noon"`},
		{"minutes out of order", "0,1\n2,1\n1,1\n", "a.csv:3: the rows must be whole minutes apart and in order"},
		{"columns change", "1700000000,1\n2\n", "a.csv:2: every row must have the same columns as the first"},
		{"empty", "# nothing\n", "a.csv: no arrivals in it"},
		{"a quote", "\"10\n", "a.csv:1:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseArrivalsCSV(strings.NewReader(tc.csv), "a.csv")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
