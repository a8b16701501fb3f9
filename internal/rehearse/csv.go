package rehearse

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// ReadArrivalsCSV reads arrivals per minute from the CSV file at path (see
// ParseArrivalsCSV).
func ReadArrivalsCSV(path string) ([]Segment, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading arrivals: %w", err)
	}
	defer f.Close()
	return ParseArrivalsCSV(f, path)
}

// ParseArrivalsCSV reads arrivals per minute, one minute a row, as a sale's
// metrics export them: either one column, the arrivals of each minute in turn, or
// two, a time and the arrivals of the minute from it. The time is Unix seconds (as
// Prometheus writes them, fractions allowed), RFC 3339, or the minute's number
// (0, 1, 2, …); the rows are a minute apart, a missing minute having none. Counts may be fractional (an increase()
// over a minute is): they are rounded so that the total is kept. A first row that
// is not numbers is a header, and `#` starts a comment line. name is what errors
// call the file.
func ParseArrivalsCSV(r io.Reader, name string) ([]Segment, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.Comment = '#'
	var (
		segs      []Segment
		total     float64
		emitted   int
		last      time.Time
		timed     = -1 // -1 unknown yet; 0 one column; 1 time and count
		firstData = true
		numbered  = false // the time column counts minutes
	)
	emit := func(v float64) {
		total += v
		n := int(math.Round(total)) - emitted
		emitted += n
		segs = append(segs, Segment{N: n, Over: time.Minute})
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("%s:%d: %v", name, pe.Line, pe.Err)
			}
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if len(rec) > 2 {
			return nil, fmt.Errorf("%s:%d: want one column (arrivals) or two (time, arrivals), got %d", name, line, len(rec))
		}
		countText := strings.TrimSpace(rec[len(rec)-1])
		v, err := strconv.ParseFloat(countText, 64)
		if err != nil && firstData {
			firstData = false // a header
			continue
		}
		firstData = false
		switch {
		case err != nil || math.IsNaN(v) || math.IsInf(v, 0):
			return nil, fmt.Errorf("%s:%d: want a number of arrivals, got %q", name, line, countText)
		case v < 0:
			return nil, fmt.Errorf("%s:%d: arrivals cannot be negative, got %s", name, line, countText)
		case total+v > MaxVisitors:
			return nil, fmt.Errorf("%s:%d: more arrivals than a rehearsal takes (%d)", name, line, MaxVisitors)
		}
		cols := len(rec) - 1
		if timed == -1 {
			timed = cols
		} else if cols != timed {
			return nil, fmt.Errorf("%s:%d: every row must have the same columns as the first", name, line)
		}
		if cols == 1 {
			at, err := parseCSVTime(strings.TrimSpace(rec[0]))
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, line, err)
			}
			// Numbers below 1e8 (1973, in Unix seconds) count minutes.
			if last.IsZero() && at.Unix() < 1e8 {
				numbered = true
			}
			if numbered {
				at = time.Unix(0, 0).Add(time.Duration(at.UnixMilli()) * time.Minute / 1000)
			}
			if !last.IsZero() {
				gap := at.Sub(last)
				// Prometheus writes times to the millisecond: a minute is a minute within one.
				minutes := int(math.Round(gap.Minutes()))
				if minutes < 1 || (gap-time.Duration(minutes)*time.Minute).Abs() > time.Second {
					return nil, fmt.Errorf("%s:%d: the rows must be whole minutes apart and in order; this one is %v after the one before", name, line, gap)
				}
				for range minutes - 1 {
					emit(0)
				}
			}
			last = at
		}
		emit(v)
	}
	if len(segs) == 0 {
		return nil, fmt.Errorf("%s: no arrivals in it", name)
	}
	return segs, nil
}

// parseCSVTime reads Unix seconds or an RFC 3339 time.
func parseCSVTime(s string) (time.Time, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		return time.UnixMilli(int64(math.Round(f * 1000))), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("want a time as Unix seconds, RFC 3339 or a minute's number, got %q", s)
}
