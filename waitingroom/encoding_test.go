package waitingroom

import (
	"strings"
	"testing"
)

// Browsers get the gzip page; a client that refuses gzip, prefers identity, or names
// no coding at all gets the page as it is.
func TestAcceptsGzip(t *testing.T) {
	for _, tc := range []struct {
		lines []string
		gzip  bool
	}{
		{nil, false},
		{[]string{""}, false},
		{[]string{"gzip, deflate, br, zstd"}, true}, // Chrome, Firefox
		{[]string{"gzip, deflate, br"}, true},       // Safari
		{[]string{"gzip"}, true},
		{[]string{"GZip"}, true},
		{[]string{"x-gzip"}, true},
		{[]string{" br ,  gzip ; q=0.5 "}, true},
		{[]string{"br"}, false},
		{[]string{"identity"}, false},
		{[]string{"gzip;q=0"}, false},
		{[]string{"gzip;q=0.000"}, false},
		{[]string{"gzip;q=0, *"}, false}, // named, refused: * does not override
		{[]string{"*"}, true},
		{[]string{"*;q=0"}, false},
		{[]string{"br;q=1, *;q=0.1"}, true},
		{[]string{"gzip;q=0.5, identity;q=0.8"}, false},
		{[]string{"gzip;q=0.5, identity;q=0.5"}, true}, // a tie: the smaller page
		{[]string{"gzip;q=0.5, *;q=0.8"}, false},       // identity is under *
		{[]string{"gzip;q=0.5, identity;q=0"}, true},
		{[]string{"gzip;q=0.1"}, true},           // identity unweighted: gzip is what was asked for
		{[]string{"identity;q=0, *;q=0"}, false}, // nothing acceptable: the page as it is
		{[]string{"gzip;q=0.001"}, true},
		{[]string{"gzip;q=1."}, true},
		{[]string{"gzip;q=2"}, false}, // not a weight: the item is skipped
		{[]string{"gzip;q=1.5"}, false},
		{[]string{"gzip;q=.5"}, false},
		{[]string{"gzip;q=0.5000"}, false},
		{[]string{"gzip;q=-0"}, false},
		{[]string{"gzip;q=NaN"}, false},
		{[]string{"gzip;q=abc, deflate"}, false},
		{[]string{"gzip;q="}, false},
		{[]string{"gzip;q=0.5;q=0"}, true}, // the first q counts
		{[]string{"gzip;level=9;q=0.9"}, true},
		{[]string{"deflate", "gzip"}, true}, // several header lines
		{[]string{"gzip", "gzip;q=0"}, true},
		{[]string{"gzipped, gzip-x"}, false},
		{[]string{",,;,gzip"}, true},
	} {
		if got := acceptsGzip(tc.lines); got != tc.gzip {
			t.Errorf("Accept-Encoding %q: gzip %v, want %v", tc.lines, got, tc.gzip)
		}
	}
}

// Reading a header costs no memory, however many items it has and however they are
// malformed: a request may carry a megabyte of them.
func TestAcceptsGzipAllocatesNothing(t *testing.T) {
	lines := []string{strings.Repeat("gzip;q=x, br;q=1.5, *;q=, identity;;q=0.12345,", 1000)}
	if allocs := testing.AllocsPerRun(10, func() { acceptsGzip(lines) }); allocs != 0 {
		t.Fatalf("acceptsGzip allocates %.0f times", allocs)
	}
}
