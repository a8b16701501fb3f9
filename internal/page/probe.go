package page

import (
	"bytes"
	"html/template"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
)

// probe is a private copy of a page's template, parsed from the same text with the
// same functions, except that number, eta and percent recognise the sentinels it
// renders with. One render of it with every volatile field set to a sentinel shows
// where each field lands in the page and how html/template escaped it (see
// frame.go). The template the visitors get is never touched.
type probe struct {
	mu   sync.Mutex // one render at a time: the sentinels below belong to it
	tmpl *template.Template

	// Fresh for every render, so that no static text (a room name, a translation)
	// can be mistaken for a hole: it cannot know them in advance.
	token     string               // in every mark
	sentinels [numIntFields]string // the decimal of each number field's sentinel
	values    [numIntFields]int    // the sentinels
	percents  [numIntFields]int    // what percent makes of each sentinel
	eta       etaTexts             // the language of this render
}

// digits and nonceRunes are what a number and a nonce print; a mark carries them so
// that the render shows whether the escaper left each of them alone.
const (
	digits     = "0123456789"
	nonceRunes = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" + digits
)

// Mark delimiters: private-use runes, which no escaper splice accepts changes.
const (
	markOpen  = "\ue000"
	markMid   = "\ue001"
	markClose = "\ue002"
)

// newProbe parses text again with marking functions and escapes it, so that its tree
// can be checked (checkSplice) and its renders split.
func newProbe(name, text string) (*probe, error) {
	p := new(probe)
	funcs := Funcs()
	funcs["number"] = func(t map[string]string, n int) string {
		if f, ok := p.fieldOf(n); ok {
			return p.mark(formNumber, f)
		}
		return formatNumber(t, n)
	}
	funcs["eta"] = func(t map[string]string, n int) string {
		if f, ok := p.fieldOf(n); ok {
			return p.mark(formETA, f)
		}
		return formatETA(t, n)
	}
	funcs["percent"] = func(n int) int {
		if f, ok := p.fieldOf(n); ok {
			return p.percents[f]
		}
		return percent(n)
	}
	tmpl, err := template.New(name).Funcs(funcs).Parse(text)
	if err != nil {
		return nil, err
	}
	// html/template escapes on the first execution; the tree is escaped even when
	// the sample data then fails to render. The sample's own numbers, not sentinels:
	// the tree is not checked yet, and {{range .Position}} over a sentinel would
	// not end.
	p.tmpl = tmpl
	p.mu.Lock()
	p.arm(sharedMessages(defaultLang))
	_ = tmpl.Execute(io.Discard, samplePage())
	p.mu.Unlock()
	return p, nil
}

// arm draws new sentinels for a render in the language of t.
func (p *probe) arm(t map[string]string) {
	p.token = randomString(nonceRunes, 12)
	for f := range p.values {
		p.values[f] = sentinel()
		p.percents[f] = sentinel()
		p.sentinels[f] = strconv.Itoa(p.values[f])
	}
	p.eta = etaTextsOf(t)
}

// data is d with every volatile field set to its sentinel.
func (p *probe) data(d Data) Data {
	d.Position = p.values[fieldPosition]
	d.Waiting = p.values[fieldWaiting]
	d.Active = p.values[fieldActive]
	d.ETASeconds = p.values[fieldETASeconds]
	d.Progress = p.values[fieldProgress]
	d.StartsInSeconds = p.values[fieldStartsIn]
	d.Nonce = p.mark(formRaw, fieldNonce)
	return d
}

func (p *probe) fieldOf(n int) (field, bool) {
	for f, v := range p.values {
		if n == v {
			return field(f), true
		}
	}
	return 0, false
}

// mark is what the probe prints for form of f: the token, which hole it is, and
// every rune that form can print for a real value.
func (p *probe) mark(fm form, f field) string {
	return markOpen + p.token + string(rune('a'+fm)) + string(rune('a'+f)) + markMid + p.runes(fm) + markClose
}

func (p *probe) runes(fm form) string {
	switch fm {
	case formNumber:
		return digits + p.eta.separator
	case formETA:
		e := p.eta
		return digits + e.separator + e.underMinute + e.minutesOne + e.minutesOther + e.hoursOther
	default:
		return nonceRunes
	}
}

// render executes the probe for d and reports where the holes are.
func (p *probe) render(d *Data, t map[string]string) ([]byte, []spot, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.arm(t)
	probed := p.data(*d)
	probed.T = t
	var out bytes.Buffer
	if err := p.tmpl.Execute(&out, probed); err != nil {
		return nil, nil, err
	}
	spots, ok := p.find(out.Bytes())
	if !ok {
		return nil, nil, errUnspliced
	}
	return out.Bytes(), spots, nil
}

// spot is a hole found in a probe render: the bytes [start, end) are the sentinel.
type spot struct {
	start, end int
	hole       hole
}

// find locates every mark and every number sentinel in out. It fails when a mark
// came out changed: an escaper altered a rune a real value may print.
func (p *probe) find(out []byte) ([]spot, bool) {
	var spots []spot
	open := []byte(markOpen + p.token)
	for at := 0; ; {
		i := bytes.Index(out[at:], open)
		if i < 0 {
			break
		}
		start := at + i
		rest := out[start+len(open):]
		if len(rest) < 2 {
			return nil, false
		}
		h := hole{form: form(rest[0] - 'a'), field: field(rest[1] - 'a')}
		body := markMid + p.runes(h.form) + markClose
		if h.field >= numFields || !bytes.HasPrefix(rest[2:], []byte(body)) {
			return nil, false
		}
		at = start + len(open) + 2 + len(body)
		spots = append(spots, spot{start, at, h})
	}
	for f := range numIntFields {
		for fm, s := range map[form]string{formRaw: p.sentinels[f], formPercent: strconv.Itoa(p.percents[f])} {
			for at := 0; ; {
				i := bytes.Index(out[at:], []byte(s))
				if i < 0 {
					break
				}
				spots = append(spots, spot{at + i, at + i + len(s), hole{form: fm, field: field(f)}})
				at += i + len(s)
			}
		}
	}
	return spots, true
}

// sentinel is a random 18-digit number that has every digit in it, so that finding
// it unchanged in a render shows that the escaper leaves every digit alone.
func sentinel() int {
	perm := rand.Perm(10)
	if perm[0] == 0 {
		perm[0], perm[1] = perm[1], perm[0]
	}
	var b strings.Builder
	for _, d := range perm {
		b.WriteByte(digits[d])
	}
	b.WriteString(randomString(digits, 8))
	n, _ := strconv.Atoi(b.String())
	return n
}

func randomString(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return string(b)
}
