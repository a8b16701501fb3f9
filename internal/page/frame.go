package page

import (
	"bytes"
	"errors"
	"slices"
	"strconv"
)

// A frame is one page rendered once for everything but its volatile fields: static
// bytes with holes where a request's numbers and nonce go. Writing a frame is copying
// bytes and formatting a few numbers, where executing the template costs hundreds of
// reflective calls and allocations for the same bytes.

// hole is where a volatile field is printed, and how.
type hole struct {
	form  form // formRaw, formNumber, formETA or formPercent
	field field
}

type frame struct {
	static []byte
	cuts   []int // hole i goes after static[:cuts[i]]
	holes  []hole
	eta    etaTexts
	gz     *deflated // the static bytes compressed (gzip.go); nil if that failed
	direct bool      // this page cannot be spliced: execute the template
}

// directFrame stands in the cache for a key whose page must be executed each time,
// so that it is not probed again on every request.
var directFrame = &frame{direct: true}

var errUnspliced = errors.New("the probe render could not be split")

// buildFrame renders d's page through the probe and cuts it at the holes. It then
// renders two pages with real numbers both ways and keeps the frame only if they are
// byte for byte what the template writes: whatever the tree walk and the probe might
// have missed, a frame that differs is never served.
func (l *layout) buildFrame(d *Data) *frame {
	t := sharedMessages(d.Lang)
	out, spots, err := l.probe.render(d, t)
	if err != nil {
		return directFrame
	}
	slices.SortFunc(spots, func(a, b spot) int { return a.start - b.start })
	holeBytes := 0
	for _, s := range spots {
		holeBytes += s.end - s.start
	}
	f := &frame{eta: etaTextsOf(t), static: make([]byte, 0, max(len(out)-holeBytes, 0))}
	at := 0
	for _, s := range spots {
		if s.start < at {
			return directFrame // overlapping sentinels: not a render to trust
		}
		f.static = append(f.static, out[at:s.start]...)
		f.cuts = append(f.cuts, len(f.static))
		f.holes = append(f.holes, s.hole)
		at = s.end
	}
	f.static = append(f.static, out[at:]...)

	checks := checkData(d)
	for _, check := range checks {
		want, err := l.execute(nil, &check)
		if err != nil || !bytes.Equal(f.appendTo(nil, &check), want) {
			return directFrame
		}
	}
	// The same for the gzip twin, though nothing of the template's is left to go
	// wrong in it: a twin that does not inflate to the page is dropped, and the page
	// goes out uncompressed.
	if z, err := f.deflate(); err == nil {
		f.gz = z
		for _, check := range checks {
			gz, ok := f.appendGzip(nil, &check)
			if !ok || !gunzips(gz, f.appendTo(nil, &check)) {
				f.gz = nil
				break
			}
		}
	}
	return f
}

// checkData are two waiters with d's key and numbers far apart: grouped thousands,
// every form of a wait, both ends of the progress bar.
func checkData(d *Data) [2]Data {
	a, b := *d, *d
	a.Position, a.Waiting, a.Active, a.ETASeconds, a.Progress, a.StartsInSeconds = 1234567, 98765432, 1000, 7*3600+5, 42, 45
	b.Position, b.Waiting, b.Active, b.ETASeconds, b.Progress, b.StartsInSeconds = 1, 0, 0, 61, 100, 23*60
	a.Nonce, b.Nonce = randomString(nonceRunes, 22), randomString(nonceRunes, 22)
	return [2]Data{a, b}
}

// appendTo writes d's page: the static bytes, and d's fields in the holes.
func (f *frame) appendTo(dst []byte, d *Data) []byte {
	dst = slices.Grow(dst, len(f.static)+32*len(f.holes))
	at := 0
	for i, h := range f.holes {
		dst = append(dst, f.static[at:f.cuts[i]]...)
		at = f.cuts[i]
		dst = f.appendHole(dst, h, d)
	}
	return append(dst, f.static[at:]...)
}

func (f *frame) appendHole(dst []byte, h hole, d *Data) []byte {
	if h.field == fieldNonce {
		return append(dst, d.Nonce...)
	}
	n := h.field.intOf(d)
	switch h.form {
	case formNumber:
		return appendNumber(dst, f.eta.separator, n)
	case formETA:
		return f.eta.append(dst, n)
	case formPercent:
		n = percent(n)
	}
	return strconv.AppendInt(dst, int64(n), 10)
}

// fits reports whether a frame may render d: the probe showed how the escapers treat
// digits and the nonce's letters, and a negative number would change how
// html/template pads it in a script.
func fits(d *Data) bool {
	// One sign test for all six: the or of numbers is negative iff one of them is.
	if d.Position|d.Waiting|d.Active|d.ETASeconds|d.Progress|d.StartsInSeconds < 0 {
		return false
	}
	for i := 0; i < len(d.Nonce); i++ {
		c := d.Nonce[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}
